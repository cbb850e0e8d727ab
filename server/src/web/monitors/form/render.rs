//! The monitor form as HTML: every field with its label, hint and message, the groups of rows
//! (alerts, noise, endpoints, headers), and the advanced part opened when it is in use.

use super::*;

/// What the form is rendered with besides its fields.
pub struct Context<'a> {
    pub session: &'a Session,
    /// Where the form posts to save (`/monitors/new` or `/monitors/{id}/edit`).
    pub action: String,
    /// The one-time token of a new monitor's form.
    pub token: Option<&'a str>,
    /// The user's folders: id and path in words.
    pub folders: &'a [(String, String)],
    /// Where notifications go when the monitor names no endpoints, in words: the endpoints
    /// of the nearest folder up the tree naming some (with its name), else the user's own.
    pub default_endpoints: &'a [String],
    /// The folder `default_endpoints` come from; `None`: they are the user's own.
    pub inherited_from: Option<&'a str>,
    /// The service's shortest recurrence.
    pub min_recurrence: i32,
}

/// The name of the button that leads to point-and-click selection (see [`crate::web::monitors::edit`]).
pub const PICK_BUTTON: &str = "pick";

/// The whole form, with `problems` at their fields and summed up at the top.
pub fn render(fields: &Fields, problems: &Problems, ctx: &Context<'_>) -> Markup {
    let portal = fields.is_portal();
    html! {
        form.card.monitor-form #monitor-form method="post" action=(ctx.action) novalidate {
            // Enter in a text field submits with the first button: make that one Save.
            button.visually-hidden type="submit" tabindex="-1" aria-hidden="true" { "Save" }
            input type="hidden" name="csrf" value=(ctx.session.csrf);
            @if let Some(token) = ctx.token { input type="hidden" name="token" value=(token); }
            @if let Some(id) = &fields.id { input type="hidden" name="id" value=(id); }
            @if !problems.is_empty() {
                div.alert.problems #problems role="alert" tabindex="-1" {
                    p { "The monitor was not saved. Please correct:" }
                    ul {
                        @for (slot, messages) in in_form_order(problems, fields) {
                            @for message in messages {
                                li { a href={ "#" (id_of(slot)) } { (label_of(slot)) ": " (message) } }
                            }
                        }
                    }
                }
            }
            fieldset.group {
                legend { "Page" }
                (text_field("url", "URL", &fields.url, "url", problems, Some("The page to watch, or where a Portal crawl starts.")))
                (text_field("name", "Name", &fields.name, "text", problems, Some("Shown in the list; the page's host when left empty.")))
                div.field {
                    span.label #jobType-label { "Kind" }
                    div.choices role="radiogroup" aria-labelledby="jobType-label" {
                        label.choice {
                            input type="radio" name="jobType" value="SinglePage" checked[!portal];
                            " One page"
                        }
                        label.choice {
                            input type="radio" name="jobType" value="Portal" checked[portal];
                            " Portal: a site, crawled from the URL"
                        }
                    }
                    (message("jobType", problems))
                }
            }
            fieldset.group {
                legend { "What to watch" }
                (text_field("xPath", "XPath", &fields.x_path, "text", problems, Some("The part of the page to watch, such as //p[@class='price']; the whole page when empty.")))
                (text_field("excludeXPath", "Exclude XPath", &fields.exclude_x_path, "text", problems, Some("Parts removed before the XPath applies (ads, clocks).")))
                p.pick-row {
                    button.button name=(PICK_BUTTON) value="1" type="submit" formnovalidate { "Pick with the mouse" }
                    span.hint { "Opens the page of the URL above: click what to watch or to ignore." }
                }
                (text_field("regex", "Regex", &fields.regex, "text", problems, Some("A regular expression applied to the text; its first group (or the match) is the value.")))
            }
            (alerts_group(fields, problems))
            (noise_group(fields, problems))
            (fields.steps.render(problems))
            fieldset.group {
                legend { "Schedule" }
                div.field {
                    label for=(id_of("recurrenceInSeconds")) { "Checked" }
                    select id=(id_of("recurrenceInSeconds")) name="recurrence"
                        aria-invalid=[invalid("recurrenceInSeconds", problems)]
                        aria-describedby=(describedby("recurrenceInSeconds", problems, true)) {
                        @for (seconds, words) in PRESETS {
                            option value=(seconds) selected[fields.recurrence == seconds.to_string()] { (words) }
                        }
                        option value="custom" selected[fields.recurrence == "custom"] { "Every … seconds (below)" }
                    }
                    (message("recurrenceInSeconds", problems))
                    p.hint id=(format!("{}-hint", id_of("recurrenceInSeconds"))) { "This server checks at most every " (ctx.min_recurrence) " s." }
                }
                div.field {
                    label for="f-recurrenceCustom" { "Custom interval (seconds)" }
                    input #f-recurrenceCustom type="text" inputmode="numeric" name="recurrenceCustom" value=(fields.recurrence_custom);
                }
            }
            (endpoints_group(fields, problems, ctx))
            (portal_group(fields, problems))
            details.group.more open[advanced_open(fields, problems)] {
                summary { "Request, location and more" }
                div.details-body {
                    div.row2 {
                        (text_field("method", "Method", &fields.method, "text", problems, None))
                        div.field {
                            label for=(id_of("location")) { "Location" }
                            select id=(id_of("location")) name="location"
                                aria-invalid=[invalid("location", problems)]
                                aria-describedby=[describedby_opt("location", problems)] {
                                @for code in LocationCode::ALL {
                                    option value=(code.name()) selected[LocationCode::parse(&fields.location) == Some(*code)] { (location_words(*code)) }
                                }
                            }
                            (message("location", problems))
                        }
                    }
                    (text_field("proxies", "Proxy locations", &fields.proxies, "text", problems, Some("Location codes of the server's proxies, separated by commas (such as us, gb).")))
                    (pairs_group("headers", "Headers", "Name", "Value", &fields.headers, None, problems))
                    (textarea("body", "Body", &fields.body, 4, problems, Some("Sent with the request (POST and the like).")))
                    div.checks {
                        (checkbox("dynamicContent", "Render the page in a browser (for pages built by scripts)", fields.dynamic_content))
                        (checkbox("scrollPage", "Scroll rendered pages to the bottom first", fields.scroll_page))
                        (checkbox("collectRawHtml", "Keep the raw HTML of each check", fields.collect_raw_html))
                    }
                }
            }
            fieldset.group {
                legend { "Filing" }
                div.field {
                    label for=(id_of("folderId")) { "Folder" }
                    select id=(id_of("folderId")) name="folderId"
                        aria-invalid=[invalid("folderId", problems)]
                        aria-describedby=[describedby_opt("folderId", problems)] {
                        option value="" selected[fields.folder.is_empty()] { "All monitors (top level)" }
                        @if !fields.folder.is_empty() && !ctx.folders.iter().any(|(id, _)| *id == fields.folder) {
                            // Deeper than the folders listed: kept, not moved to the top level.
                            option value=(fields.folder) selected { "Its current folder" }
                        }
                        @for (id, path) in ctx.folders {
                            option value=(id) selected[&fields.folder == id] { (path) }
                        }
                    }
                    (message("folderId", problems))
                }
                (textarea("note", "Note", &fields.note, 3, problems, None))
            }
            (message("form", problems))
            div.form-actions {
                button.button.primary type="submit" { "Save monitor" }
                button.button #preview-button type="submit" formaction="/monitors/preview#preview" { "Preview" }
                a.button.quiet href=(cancel_link(fields)) { "Cancel" }
            }
        }
    }
}

pub(super) fn cancel_link(fields: &Fields) -> String {
    match (&fields.id, fields.folder.is_empty()) {
        (Some(id), _) => format!("/monitors/{id}"),
        (None, false) => format!("/folders/{}", fields.folder),
        (None, true) => "/".into(),
    }
}

pub(super) fn advanced_open(fields: &Fields, problems: &Problems) -> bool {
    let used = fields.method.trim() != "GET" && !fields.method.trim().is_empty()
        || !fields.headers.is_empty()
        || !fields.body.is_empty()
        || !fields.proxies.trim().is_empty()
        || LocationCode::parse(&fields.location).is_some_and(|l| l != LocationCode::Default)
        || fields.dynamic_content
        || fields.scroll_page
        || fields.collect_raw_html;
    used || problems.0.keys().any(|slot| {
        ["method", "location", "proxies", "headers", "body"]
            .iter()
            .any(|p| slot.starts_with(p))
    })
}

pub(super) fn alerts_group(fields: &Fields, problems: &Problems) -> Markup {
    html! {
        fieldset.group id=(id_of("alerts")) aria-describedby=[describedby_opt("alerts", problems)] {
            legend { "Alerts" }
            p.hint { "Tell me when… (choose “No alert” to remove a row). “Stays the same for” takes a time such as 30 d or 12 h." }
            (message("alerts", problems))
            @for (i, row) in fields.alerts.iter().enumerate() {
                @let kind = format!("alerts[{i}].type");
                @let compare = format!("alerts[{i}].parameters.compare");
                @let value = format!("alerts[{i}].value");
                @let remind = format!("alerts[{i}].remindEverySeconds");
                div.row {
                    div.field {
                        label for=(id_of(&kind)) { "Alert " (i + 1) }
                        select id=(id_of(&kind)) name=(kind)
                            aria-invalid=[invalid(&kind, problems)]
                            aria-describedby=[describedby_opt(&kind, problems)] {
                            option value="" selected[row.kind.is_empty()] { "No alert" }
                            @for t in AlertType::ALL {
                                option value=(t.name()) selected[AlertType::parse(&row.kind) == Some(*t)] { (alert_words(*t)) }
                            }
                        }
                        (message(&kind, problems))
                    }
                    div.field {
                        label for=(id_of(&compare)) { "Compared with" }
                        select id=(id_of(&compare)) name=(compare)
                            aria-invalid=[invalid(&compare, problems)]
                            aria-describedby=[describedby_opt(&compare, problems)] {
                            @for c in CompareType::ALL {
                                option value=(c.name()) selected[CompareType::parse(&row.compare).unwrap_or_default() == *c] { (compare_words(*c)) }
                            }
                        }
                        (message(&compare, problems))
                    }
                    (text_field(&value, "Value", &row.value, "text", problems, None))
                    (text_field(&remind, "Remind while failing", &row.remind, "text", problems, Some("Error alerts: every 6 h, say. Empty: never.")))
                }
            }
            button.button.quiet type="submit" name="add" value="alerts" { "Add another alert" }
            (text_field("errorAfterFailures", "Failed checks in a row before an Error alert", &fields.error_after_failures, "number", problems, Some("Empty: 2, the second an early retry, so one passing failure never alerts. 1 alerts on the first failure.")))
        }
    }
}

/// The Noise section: the masks (pattern, whose, example, an active checkbox; a person's with
/// a remove button), a field to add a pattern, and the line order.
pub(super) fn noise_group(fields: &Fields, problems: &Problems) -> Markup {
    html! {
        fieldset.group.noise id=(id_of("noise")) aria-describedby=[describedby_opt("noise", problems)] {
            legend { "Noise" }
            p.hint #noise-hint {
                "Parts of the value that change without meaning (a clock, a counter, a token) are masked when checks are compared, so they never alert; a real change beside them still does. "
                "wachet learns them from a few quick checks when the monitor is new or what it watches changes, and from later checks. "
                "Switch a learned one off rather than removing it: removed, it would be learned again."
            }
            @if let Some(notice) = &fields.noise_notice {
                p.notice.noise-notice role="status" { (notice) }
            }
            (message("noise", problems))
            @if fields.noise.is_empty() {
                p.empty { "No masks yet." }
            } @else {
                ul.masks {
                    @for (i, row) in fields.noise.iter().enumerate() {
                        @let pattern = format!("noise[{i}].pattern");
                        @let id = id_of(&pattern);
                        li.mask {
                            @if row.learned {
                                input type="hidden" name=(pattern) value=(row.pattern);
                                input type="hidden" name=(format!("noise[{i}].learned")) value="true";
                                input type="hidden" name=(format!("noise[{i}].example")) value=(row.example);
                                div.mask-head {
                                    span.label id=(id) { "Mask " (i + 1) ", learned: " }
                                    code.pattern { (row.pattern) }
                                }
                                @if !row.example.is_empty() {
                                    p.hint { "It masked: " q.example { (row.example) } }
                                }
                                (message(&pattern, problems))
                            } @else {
                                (text_field(&pattern, &format!("Mask {}, yours", i + 1), &row.pattern, "text", problems, None))
                            }
                            div.mask-actions {
                                label.check {
                                    input type="checkbox" name=(format!("noise[{i}].active")) value="true" checked[row.active];
                                    " Active"
                                    span.visually-hidden { " (mask " (i + 1) ")" }
                                }
                                @if !row.learned {
                                    button.button.quiet type="submit" name="remove" value=(format!("noise[{i}]")) {
                                        "Remove" span.visually-hidden { " mask " (i + 1) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            (text_field("noiseAdd", "Add a pattern", &fields.noise_add, "text", problems, Some("A regular expression over the value's text, one line at a time, such as (\\d+) people are looking: with a group, only the group is masked.")))
            div.field {
                span.label #compareLines-label { "Compare lines" }
                div.choices role="radiogroup" aria-labelledby="compareLines-label" aria-describedby="compareLines-hint" {
                    label.choice {
                        input type="radio" name="compareLines" value="ordered" checked[fields.compare_lines != "set"];
                        " In order"
                    }
                    label.choice {
                        input type="radio" name="compareLines" value="set" checked[fields.compare_lines == "set"];
                        " As a set"
                    }
                }
                (message("compareLines", problems))
                p.hint #compareLines-hint { "As a set: a list shown in another order is no change; a line added or removed is." }
            }
            div.field {
                span.label #watchLinks-label { "Link targets" }
                div.choices role="radiogroup" aria-labelledby="watchLinks-label" aria-describedby="watchLinks-hint" {
                    @for (value, label) in [("selected", "Links the xPath selects"), ("all", "Every link"), ("none", "None")] {
                        label.choice {
                            input type="radio" name="watchLinks" value=(value) checked[links_chosen(&fields.watch_links) == value];
                            " " (label)
                        }
                    }
                }
                (message("watchLinks", problems))
                p.hint #watchLinks-hint { "A link's target is shown after its text, so a button whose text stays while its address changes is a change. Every link: also on a whole page, where tracking parameters in links are noise." }
            }
        }
    }
}

pub(super) fn endpoints_group(fields: &Fields, problems: &Problems, ctx: &Context<'_>) -> Markup {
    html! {
        fieldset.group id=(id_of("notificationEndpoints")) aria-describedby=[describedby_opt("notificationEndpoints", problems)] {
            legend { "Notifications" }
            p.hint {
                "Where alerts go. Without any here, they go to "
                @if let Some(folder) = ctx.inherited_from {
                    "the endpoints of the folder “" (folder) "”: " (ctx.default_endpoints.join(", ")) "."
                } @else if ctx.default_endpoints.is_empty() {
                    "your own endpoints (you have none yet: the settings page sets them)."
                } @else {
                    "your own endpoints: " (ctx.default_endpoints.join(", ")) "."
                }
                " An address other than your account's is sent a confirmation code first."
            }
            (message("notificationEndpoints", problems))
            @for (i, row) in fields.endpoints.iter().enumerate() {
                @let kind = format!("notificationEndpoints[{i}].type");
                @let value = format!("notificationEndpoints[{i}].value");
                div.row.row2 {
                    div.field {
                        label for=(id_of(&kind)) { "Endpoint " (i + 1) " type" }
                        select id=(id_of(&kind)) name=(kind)
                            aria-invalid=[invalid(&kind, problems)]
                            aria-describedby=[describedby_opt(&kind, problems)] {
                            @for t in crate::notify::channel::offered() {
                                option value=(t.name()) selected[MessagingServiceType::parse(&row.kind) == Some(t)] { (t.name()) }
                            }
                        }
                        (message(&kind, problems))
                    }
                    (text_field(&value, "Address or URL", &row.value, "text", problems, None))
                }
                @let prefix = format!("notificationEndpoints[{i}].");
                (crate::web::shared::schedule::fields(&prefix, &id_of(&format!("notificationEndpoints[{i}]")), &row.schedule,
                    &|part: &str| problems.at(&format!("{prefix}{part}")).map(|m| m.join(" "))))
            }
            button.button.quiet type="submit" name="add" value="notificationEndpoints" { "Add an endpoint" }
            (checkbox("muted", "Muted: keep this monitor's notifications on the Notifications page and send them nowhere", fields.muted))
        }
    }
}

pub(super) fn portal_group(fields: &Fields, problems: &Problems) -> Markup {
    html! {
        fieldset.group.portal id=(id_of("urlFilter")) aria-describedby=[describedby_opt("urlFilter", problems)] {
            legend { "Portal only" }
            p.hint { "Used when the kind is Portal: the crawl follows links from the URL and watches every page it finds." }
            (message("urlFilter", problems))
            div.field {
                label for=(id_of("crawlingDepth")) { "Depth (links followed from the URL)" }
                select id=(id_of("crawlingDepth")) name="crawlingDepth"
                    aria-invalid=[invalid("crawlingDepth", problems)]
                    aria-describedby=[describedby_opt("crawlingDepth", problems)] {
                    @for depth in ["1", "2", "3"] {
                        option value=(depth) selected[fields.crawling_depth.trim() == depth] { (depth) }
                    }
                }
                (message("crawlingDepth", problems))
            }
            (pairs_group("urlFilter.include", "Follow only links matching", "Match", "Text or pattern", &fields.include, Some(&["Contains", "Regex"]), problems))
            (pairs_group("urlFilter.exclude", "Never follow links matching", "Match", "Text or pattern", &fields.exclude, Some(&["Contains", "Regex"]), problems))
            div.checks {
                (checkbox("crawlPagesFromAllDomains", "Follow links to other sites", fields.all_domains))
                (checkbox("ignoreInvalidPages", "Leave out pages that answer with an error (4xx, 5xx)", fields.ignore_invalid_pages))
                (checkbox("crawlBinaryContent", "Keep files that are not web pages (PDF, images)", fields.binary))
            }
        }
    }
}

/// Rows of two fields (headers, URL filters), the first a choice when `choices` is given.
pub(super) fn pairs_group(
    list: &str,
    title: &str,
    first_label: &str,
    second_label: &str,
    rows: &[Pair],
    choices: Option<&[&str]>,
    problems: &Problems,
) -> Markup {
    let (first_part, second_part) = if choices.is_some() {
        ("type", "filter")
    } else {
        ("key", "value")
    };
    let shown: Vec<Pair> = if rows.is_empty() {
        vec![Pair::default()]
    } else {
        rows.to_vec()
    };
    html! {
        fieldset.subgroup id=(id_of(list)) {
            legend { (title) }
            (message(list, problems))
            @for (i, row) in shown.iter().enumerate() {
                @let first = format!("{list}[{i}].{first_part}");
                @let second = format!("{list}[{i}].{second_part}");
                div.row.row2 {
                    @if let Some(choices) = choices {
                        div.field {
                            label for=(id_of(&first)) { (first_label) " " (i + 1) }
                            select id=(id_of(&first)) name=(first)
                                aria-invalid=[invalid(&first, problems)]
                                aria-describedby=[describedby_opt(&first, problems)] {
                                @for choice in choices {
                                    option value=(choice) selected[row.first.eq_ignore_ascii_case(choice)] { (choice) }
                                }
                            }
                            (message(&first, problems))
                        }
                    } @else {
                        (text_field(&first, &format!("{first_label} {}", i + 1), &row.first, "text", problems, None))
                    }
                    (text_field(&second, second_label, &row.second, "text", problems, None))
                }
            }
            button.button.quiet type="submit" name="add" value=(list) { "Add another" }
        }
    }
}

pub(super) fn invalid(slot: &str, problems: &Problems) -> Option<&'static str> {
    problems.at(slot).map(|_| "true")
}

pub(super) fn describedby_opt(slot: &str, problems: &Problems) -> Option<String> {
    problems.at(slot).map(|_| format!("{}-error", id_of(slot)))
}

pub(super) fn describedby(slot: &str, problems: &Problems, has_hint: bool) -> String {
    let id = id_of(slot);
    match (problems.at(slot).is_some(), has_hint) {
        (true, true) => format!("{id}-error {id}-hint"),
        (true, false) => format!("{id}-error"),
        (false, _) => format!("{id}-hint"),
    }
}

/// The `aria-describedby` of a control: its message when it has one, and its hint.
pub(super) fn described_by(slot: &str, problems: &Problems, has_hint: bool) -> Option<String> {
    (problems.at(slot).is_some() || has_hint).then(|| describedby(slot, problems, has_hint))
}

pub(super) fn message(slot: &str, problems: &Problems) -> Markup {
    html! {
        @if let Some(messages) = problems.at(slot) {
            p.field-error id=(format!("{}-error", id_of(slot))) {
                @for (i, m) in messages.iter().enumerate() {
                    @if i > 0 { br; }
                    (m)
                }
            }
        }
    }
}

pub(super) fn text_field(
    slot: &str,
    label: &str,
    value: &str,
    kind: &str,
    problems: &Problems,
    hint: Option<&str>,
) -> Markup {
    let id = id_of(slot);
    let described = described_by(slot, problems, hint.is_some());
    html! {
        div.field {
            label for=(id) { (label) }
            input id=(id) type=(kind) name=(slot) value=(value)
                aria-invalid=[invalid(slot, problems)]
                aria-describedby=[described]
                autocomplete="off" spellcheck="false";
            (message(slot, problems))
            @if let Some(hint) = hint { p.hint id=(format!("{id}-hint")) { (hint) } }
        }
    }
}

pub(super) fn textarea(
    slot: &str,
    label: &str,
    value: &str,
    rows: u8,
    problems: &Problems,
    hint: Option<&str>,
) -> Markup {
    let id = id_of(slot);
    let described = described_by(slot, problems, hint.is_some());
    html! {
        div.field {
            label for=(id) { (label) }
            textarea id=(id) name=(slot) rows=(rows)
                aria-invalid=[invalid(slot, problems)]
                aria-describedby=[described] { (value) }
            (message(slot, problems))
            @if let Some(hint) = hint { p.hint id=(format!("{id}-hint")) { (hint) } }
        }
    }
}

pub(super) fn checkbox(name: &str, label: &str, checked: bool) -> Markup {
    html! {
        label.check {
            input type="checkbox" name=(name) value="true" checked[checked];
            " " (label)
        }
    }
}
