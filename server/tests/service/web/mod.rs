//! The web interface over the real service: HTTP-level checks of what every page and form
//! must hold, and real headless Chromium driving the pages as a person does, with screenshots
//! written under `target/screenshots/`. The browser and sign-in helpers are in
//! [`crate::support::web`].

// Notifications with their deliveries, settings and feeds.
mod account;
// When an endpoint's messages go (digests, quiet hours), set on the settings page and the
// monitor form.
mod digests;
// Defences against browsers led by other sites and users crowding others out.
mod defences;
// A new user's first day: names from page titles, feeds on their pages.
mod first_day;
// Folder management, bulk actions, search, filters and live updates.
mod folders;
// The monitor form and its preview.
mod form;
// The security and bad-input sweep of every page.
mod guard;
// The monitor form's Noise section.
mod noise;
// Headers, assets, the session cookie, CSRF, sign-in, a monitor's pages and their history.
mod pages;
// Point-and-click selection of what to watch.
mod picker;
// What a person still missed: a growing history, the keyboard alone, 375 px, no scripts.
mod polish;
// The step recorder: steps recorded by clicking a live page.
mod record;
// Browser steps on the monitor form, secrets never shown.
mod steps;
// An endpoint's own message on the settings page: its templates previewed and refused.
mod templates;
