//! The web interface: folder management, bulk actions, search, filters and live updates, over the real service and in real headless Chromium.
