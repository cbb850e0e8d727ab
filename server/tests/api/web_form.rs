//! The web interface: creating and editing monitors, with the preview, over the real service and in real headless Chromium.
