//! The web interface: notifications with their deliveries, settings and feeds, over the real service and in real headless Chromium.
