//! The web interface: point-and-click selection of what a monitor watches, over the real service and in real headless Chromium.
