/* Point-and-click selection in the preview frame. */
"use strict";
