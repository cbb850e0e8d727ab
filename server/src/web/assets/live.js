/* Live updates of the monitor list and a monitor's page (server-sent events). */
"use strict";
