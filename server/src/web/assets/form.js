/* The form's progressive enhancements (presets, preview streaming). */
"use strict";
