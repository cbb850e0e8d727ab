//! The REST API over real HTTP, as a user's script drives it: each module one resource or one
//! concern of the API, with the scheduler and delivery started where the API's answers depend
//! on them.

// Logins, tokens, their expiry and invalidation, rate limits, secrets kept hashed.
mod auth;
// Notification URLs: each service's request against its documentation, sealed secrets.
mod channels;
// Changes and failures raise only once confirmed by the scheduler's early checks.
mod confirm;
// Digests and quiet hours: messages held in the outbox, grouped, surviving a crash.
mod digests;
// Delivery of notifications to webhooks and e-mail, retried, signed, bounded.
pub(crate) mod delivery;
// Notifications that explain themselves: noise dimmed, never an empty alert.
pub(crate) mod explain;
// Fair share of the check slots among users, and the quotas per user.
mod fair;
// Folders: the tree, listings with counts and paging, moves and deletes.
mod folders;
// A disk that fills under the database, then is freed.
mod full_disk;
// History and notifications: paging, date ranges, retention as the API shows it.
pub(crate) mod history;
// HTTP conventions: media types, body limit, problem+json, CORS.
mod http;
// What clients written for Wachete's API send and read.
mod interop;
// One user never sees or changes another's data.
mod isolation;
// Reminders while a page fails, and alerts on a page that stopped changing.
mod lasting;
// One start for every test: the parts chosen by the settings, a shutdown in order.
mod lifecycle;
// Noise masks, learned and a person's, and the line order deciding what raises.
mod noise;
// The OpenAPI document matches the router both ways.
mod openapi;
// Health probes, request ids, and what a failing request logs.
mod probes;
// Notification endpoints named by folders, inherited down the tree; muted monitors.
mod routing;
// The scheduler beside the API: monitors checked on their schedule against fixture sites.
mod schedule;
// Secrets carried out in an export encrypted to a passphrase, and the service's key rotated.
mod secrets;
// The deliverer's slots shared by receiving host: a hanging receiver never holds them all.
mod slots;
// Browser steps, logins, their secrets and kept sessions.
mod steps;
// Storage of history: retention, shared values, the quota's count.
mod storage;
// Monitors: create, read, update, delete, search, pages, validation.
mod tasks;
// Endpoint templates: refused at save, rendered on delivery, previewed.
mod templates;
// The user's time zone, and the times the pages show in it.
mod time_zone;
// Moving in (imports of other tools' files) and out (the export).
mod transfer;
