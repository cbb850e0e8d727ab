//! The second noisy-page corpus (`wachet-bench noise --corpus second`): fifteen pages written
//! apart from the first corpus and without reading wachet's alert rules or the first corpus's
//! generators, so that it measures rules nobody tuned on it. Each page imitates a kind of site:
//!
//! - `news-wire`: a city news list whose headlines carry relative times ("12 min ago") on the
//!   virtual clock, a reshuffled "Trending" box and a live ticker in bursts; new headlines
//!   arrive at the top and one is corrected inside its time-carrying line.
//! - `price-api`: a JSON product API writing its keys in a new order on every response, numbers
//!   spelled `4`, `4.0` or `4e0` at random, a request id and a timestamp; the price changes and a
//!   key is removed.
//! - `shop-grid`: a home-goods product grid beside a rotating banner, "Recommended for you"
//!   boxes (with the grid's own products) and a flash-sale countdown; products are added, a
//!   price moves.
//! - `chart-swap`: a weekly music chart (positions implied by an ordered list) where two entries
//!   trade places, beside a "Fan favourites" list shuffled on every request.
//! - `replica-docs`: API documentation behind a replica that lags: now and then it serves, for
//!   two or three requests, the page as it was 9 to 14 requests earlier.
//! - `de-amtsblatt`: a German municipal notice board (German dates, times and numbers, a visitor
//!   counter, "aktualisiert vor N Minuten").
//! - `jp-weather`: a Japanese weather forecast (Japanese dates, current observations, "N分前").
//! - `slow-tracking`: a parcel-tracking page whose script fetches its configuration, then its
//!   events, each answered late (rendered: `dynamic`).
//! - `server-clock`: a "time now" page showing the server's time to the second.
//! - `visitor-count`: a museum exhibition page with visitor, viewer and like counters.
//! - `token-links`: an investor-relations documents page whose links and forms carry session
//!   ids, tracking parameters, signatures and a CSRF token.
//! - `link-target`: a download page whose button keeps its text while its target changes.
//! - `job-board`: job listings with relative dates, applicant counts, promoted listings at random
//!   places and a bot challenge now and then.
//! - `release-page`: a code-hosting project's releases (relative dates, star and download
//!   counters, a sponsors box, a 502 now and then).
//! - `flight-status`: a flight's status with its "updated N min ago", a live position, a
//!   boarding notice in bursts and a 503 now and then.
//!
//! Each generator draws its noise from [`Ctx`] (seed and request count) and shows the facts of
//! `ctx.version`; the schedules below are the truth the bench scores against. Real changes come
//! early (from request 4, while a monitor is still new), in the middle and late, next to noise
//! bursts and inside lines that carry noise; error and challenge pages never come within 3
//! requests of a real change.

use super::corpus::{Change, ChangeKind::*, Ctx, Page, Reply};
use chrono::{DateTime, Datelike, NaiveDate, Timelike, Utc};
use serde_json::json;

fn utc(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).unwrap_or_default()
}

/// A real change becomes visible within `d` requests of this one (before or after).
fn near_change(ctx: &Ctx, d: u32) -> bool {
    ctx.page.changes.iter().any(|c| c.at.abs_diff(ctx.n) <= d)
}

/// The request is in one of the inclusive `ranges` (a noise burst).
fn in_burst(ctx: &Ctx, ranges: &[(u32, u32)]) -> bool {
    ranges.iter().any(|&(a, b)| a <= ctx.n && ctx.n <= b)
}

/// `v` with `sep` between groups of three digits.
fn grouped(v: u64, sep: &str) -> String {
    let digits = v.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(sep);
        }
        out.push(c);
    }
    out
}

fn ago_en(secs: i64) -> String {
    match secs.max(0) / 60 {
        0 => "just now".to_string(),
        m @ 1..=59 => format!("{m} min ago"),
        m @ 60..=1439 => format!("{} h ago", m / 60),
        m => format!("{} d ago", m / 1440),
    }
}

fn ago_de(secs: i64) -> String {
    match secs.max(0) / 60 {
        0 => "gerade eben".to_string(),
        1 => "vor 1 Minute".to_string(),
        m @ 2..=59 => format!("vor {m} Minuten"),
        60..=119 => "vor 1 Stunde".to_string(),
        m => format!("vor {} Stunden", m / 60),
    }
}

const EN_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const EN_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const DE_MONTHS: [&str; 12] = [
    "Januar",
    "Februar",
    "März",
    "April",
    "Mai",
    "Juni",
    "Juli",
    "August",
    "September",
    "Oktober",
    "November",
    "Dezember",
];
const DE_DAYS: [&str; 7] = [
    "Montag",
    "Dienstag",
    "Mittwoch",
    "Donnerstag",
    "Freitag",
    "Samstag",
    "Sonntag",
];
const JA_DAYS: [&str; 7] = ["月", "火", "水", "木", "金", "土", "日"];

fn weekday(t: &impl Datelike) -> usize {
    t.weekday().num_days_from_monday() as usize
}

fn month(t: &impl Datelike) -> usize {
    t.month0() as usize
}

/// A whole HTML document.
fn document(lang: &str, title: &str, head: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"{lang}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n{head}</head>\n<body>\n{body}</body>\n</html>\n"
    )
}

// ---------------------------------------------------------------------------------------------
// news-wire

static NEWS_WIRE_CHANGES: [Change; 5] = [
    Change {
        at: 7,
        kind: Added,
        what: "a headline arrives at the top",
    },
    Change {
        at: 26,
        kind: Added,
        what: "a headline arrives at the top (inside a live-ticker burst)",
    },
    Change {
        at: 44,
        kind: Added,
        what: "a headline arrives at the top",
    },
    Change {
        at: 52,
        kind: InNoisyLine,
        what: "a headline corrected in its line with its relative time",
    },
    Change {
        at: 63,
        kind: Added,
        what: "a headline arrives at the top (inside a live-ticker burst)",
    },
];

/// Headlines already published: slug, text, minutes before the first request.
const WIRE_BASE: [(&str, &str, i64); 8] = [
    (
        "council-budget",
        "City council approves 2027 budget after late-night session",
        18,
    ),
    (
        "rail-strike",
        "Rail union calls off New Year's Day strike",
        34,
    ),
    (
        "fireworks-wind",
        "Harbour fireworks go ahead despite wind warning",
        51,
    ),
    (
        "hospital-wing",
        "New children's wing opens at St. Mary's hospital",
        95,
    ),
    ("tram-line", "Tram line 4 extension delayed to spring", 140),
    (
        "museum-record",
        "Museum reports record visitor numbers for 2026",
        205,
    ),
    (
        "flood-defences",
        "Flood defences upgraded along the river path",
        330,
    ),
    (
        "school-meals",
        "Free school meals extended to all primary pupils",
        470,
    ),
];

const WIRE_TRENDING: [&str; 9] = [
    "Where to watch the fireworks tonight",
    "Night bus timetable for New Year's Eve",
    "Ten restaurants open on 1 January",
    "Weather: frost expected after midnight",
    "Parking restrictions in the old town",
    "Photos: the year in pictures",
    "Bin collection changes over the holidays",
    "Quiz: how well do you know 2026?",
    "Live: road closures around the harbour",
];

const WIRE_LIVE: [&str; 6] = [
    "crowds building along the quay",
    "police ask visitors to use the north entrance",
    "trams running every 5 minutes",
    "countdown screens switched on",
    "ferry services suspended until 01:00",
    "first-aid tents open at both ends of the promenade",
];

fn news_wire(ctx: &Ctx) -> Reply {
    let now = ctx.now();
    let start = ctx.time_at(0);
    let mut items: Vec<(i64, &str, String)> = WIRE_BASE
        .iter()
        .map(|&(slug, text, min)| (start - min * 60, slug, text.to_string()))
        .collect();
    // Change index -> the headline it brings.
    let arrivals = [
        (
            0,
            "waterfront-crowds",
            "Thousands gather on the waterfront ahead of midnight",
        ),
        (
            1,
            "fireworks-2027",
            "Fireworks light up the harbour as 2027 begins",
        ),
        (
            2,
            "bridge-closure",
            "Harbour bridge closed for repairs until Friday",
        ),
        (4, "first-baby", "City's first baby of 2027 born at 00:21"),
    ];
    for (i, slug, text) in arrivals {
        if ctx.version > i {
            let at = ctx.page.changes[i].at;
            let text = if i == 2 && ctx.version > 3 {
                text.replace("until Friday", "until Monday")
            } else {
                text.to_string()
            };
            items.push((ctx.time_at(at) - 30, slug, text));
        }
    }
    items.sort_by_key(|item| std::cmp::Reverse(item.0));
    let mut list = String::new();
    for (published, slug, text) in items.iter().take(10) {
        list.push_str(&format!(
            "<li><a href=\"/2027/01/{slug}\">{text}</a> <span class=\"ago\">{}</span></li>\n",
            ago_en(now - published)
        ));
    }
    let mut trending = String::new();
    for (i, t) in ctx
        .shuffled(0x7e4d, &WIRE_TRENDING)
        .iter()
        .take(5)
        .enumerate()
    {
        trending.push_str(&format!(
            "<li>{t} <small>{} reading</small></li>\n",
            grouped(40 + ctx.below(0x7e50 + i as u64, 2400), ",")
        ));
    }
    let live = if in_burst(ctx, &[(22, 29), (60, 64)]) {
        let t = utc(now);
        format!(
            "<p class=\"live\">LIVE {:02}:{:02}:{:02} — {}</p>\n",
            t.hour(),
            t.minute(),
            t.second(),
            ctx.pick(0x11fe, &WIRE_LIVE)
        )
    } else {
        String::new()
    };
    let t = utc(now);
    let body = format!(
        "<header><h1>The Harbour Courier</h1><p class=\"updated\">Updated {:02}:{:02} GMT</p></header>\n\
         {live}<main>\n<h2>Latest</h2>\n<ul id=\"latest\">\n{list}</ul>\n</main>\n\
         <aside id=\"trending\"><h2>Trending</h2><ol>\n{trending}</ol></aside>\n\
         <footer>© 2027 Harbour Courier Ltd · <a href=\"/privacy\">Privacy</a></footer>\n",
        t.hour(),
        t.minute()
    );
    Reply::html(document(
        "en-GB",
        "Latest news – The Harbour Courier",
        "",
        &body,
    ))
}

// ---------------------------------------------------------------------------------------------
// price-api

static PRICE_API_CHANGES: [Change; 3] = [
    Change {
        at: 14,
        kind: JsonValue,
        what: "price 89 -> 79",
    },
    Change {
        at: 38,
        kind: Removed,
        what: "the discount_pct key is removed",
    },
    Change {
        at: 61,
        kind: JsonValue,
        what: "price 79 -> 84.5",
    },
];

/// A number of hundredths spelled one of three equal ways: shortest (`4`, `84.5`), with a
/// fraction (`4.0`, `84.50`) or in exponent form (`4e0`, `8.45e1`). For values of 1 or more.
fn spell(ctx: &Ctx, salt: u64, hundredths: i64) -> String {
    let (int, frac) = (hundredths / 100, hundredths % 100);
    let short = match frac {
        0 => int.to_string(),
        f if f % 10 == 0 => format!("{int}.{}", f / 10),
        f => format!("{int}.{f:02}"),
    };
    match ctx.below(salt, 3) {
        0 => short,
        1 if frac == 0 => format!("{int}.0"),
        1 => format!("{int}.{frac:02}"),
        _ => {
            let exp = int.to_string().len() - 1;
            let digits = short.replace('.', "");
            let digits = digits.trim_end_matches('0');
            match digits.len() {
                0 => "0".to_string(),
                1 => format!("{digits}e{exp}"),
                _ => format!("{}.{}e{exp}", &digits[..1], &digits[1..]),
            }
        }
    }
}

/// A JSON object with its members in a new order on every request.
fn object(ctx: &Ctx, salt: u64, members: &[(&str, String)]) -> String {
    let parts: Vec<String> = ctx
        .shuffled(salt, members)
        .iter()
        .map(|(k, v)| format!("\"{k}\":{v}"))
        .collect();
    format!("{{{}}}", parts.join(","))
}

fn price_api(ctx: &Ctx) -> Reply {
    let price = [8900, 7900, 7900, 8450][ctx.version.min(3)];
    let t = utc(ctx.now());
    let id = format!(
        "{}-{}-4{}-a{}-{}",
        ctx.token(0x1d1, 8),
        ctx.token(0x1d2, 4),
        ctx.token(0x1d3, 3),
        ctx.token(0x1d4, 3),
        ctx.token(0x1d5, 12)
    );
    let mut members = vec![
        ("request_id", format!("\"{id}\"")),
        (
            "generated_at",
            format!(
                "\"{}.{:03}Z\"",
                t.format("%Y-%m-%dT%H:%M:%S"),
                ctx.below(0x3a, 1000)
            ),
        ),
        (
            "served_by",
            format!("\"api-{}.eu-west\"", 1 + ctx.below(0x5e, 4)),
        ),
        ("sku", "\"KB-4410-BR\"".to_string()),
        (
            "name",
            "\"Mechanical keyboard, 87 keys, brown switches\"".to_string(),
        ),
        ("price", spell(ctx, 0x9a1, price)),
        ("currency", "\"EUR\"".to_string()),
        ("stock", spell(ctx, 0x9a2, 400)),
        (
            "rating",
            object(
                ctx,
                0x9a3,
                &[
                    ("average", spell(ctx, 0x9a4, 450)),
                    ("count", spell(ctx, 0x9a5, 120_300)),
                ],
            ),
        ),
        (
            "dimensions_mm",
            object(
                ctx,
                0x9a6,
                &[
                    ("width", spell(ctx, 0x9a7, 35_500)),
                    ("depth", spell(ctx, 0x9a8, 12_700)),
                    ("height", spell(ctx, 0x9a9, 3_800)),
                ],
            ),
        ),
    ];
    if ctx.version < 2 {
        members.push(("discount_pct", spell(ctx, 0x9aa, 1000)));
    }
    Reply {
        status: 200,
        content_type: "application/json",
        body: object(ctx, 0x9ab, &members),
        retry_after: None,
    }
}

// ---------------------------------------------------------------------------------------------
// shop-grid

static SHOP_GRID_CHANGES: [Change; 3] = [
    Change {
        at: 5,
        kind: Added,
        what: "a product is added to the grid",
    },
    Change {
        at: 47,
        kind: Added,
        what: "a product is added to the grid (inside a flash-sale countdown burst)",
    },
    Change {
        at: 70,
        kind: OneChar,
        what: "a price 42.00 -> 42.50",
    },
];

const GRID: [(&str, u32); 8] = [
    ("Oak serving board", 2990),
    ("Ceramic pour-over set", 4200),
    ("Wool throw, charcoal", 6900),
    ("Brass desk lamp", 8950),
    ("Glass storage jars, set of 3", 2450),
    ("Linen apron", 2200),
    ("Enamel mug", 1250),
    ("Copper plant mister", 1890),
];
const GRID_NEW: [(&str, u32); 2] = [
    ("Walnut desk organiser", 3490),
    ("Linen cushion cover", 1950),
];
const GRID_OTHERS: [(&str, u32); 5] = [
    ("Cotton tea towels, pair", 1400),
    ("Stoneware bowl", 1600),
    ("Bamboo cutlery set", 1150),
    ("Beeswax candles", 990),
    ("Cork coasters, set of 6", 850),
];
const GRID_BANNERS: [&str; 5] = [
    "Free delivery on orders over €50",
    "New: the winter linen collection",
    "Members save 10% — join today",
    "Gift cards from €10, delivered by email",
    "Order by 2 pm for next-day delivery",
];

fn euros(cents: u32) -> String {
    format!("€{}.{:02}", cents / 100, cents % 100)
}

fn shop_grid(ctx: &Ctx) -> Reply {
    let mut products: Vec<(&str, u32)> = Vec::new();
    if ctx.version > 1 {
        products.push(GRID_NEW[1]);
    }
    if ctx.version > 0 {
        products.push(GRID_NEW[0]);
    }
    for &(name, price) in &GRID {
        let price = if name == "Ceramic pour-over set" && ctx.version > 2 {
            4250
        } else {
            price
        };
        products.push((name, price));
    }
    let mut grid = String::new();
    for (name, price) in &products {
        grid.push_str(&format!(
            "<div class=\"product\"><h3>{name}</h3><p class=\"price\">{}</p>\
             <button type=\"button\">Add to basket</button></div>\n",
            euros(*price)
        ));
    }
    let mut pool: Vec<(&str, u32)> = products.clone();
    pool.extend_from_slice(&GRID_OTHERS);
    let mut recs = String::new();
    for (i, (name, price)) in ctx.shuffled(0x4ec0, &pool).iter().take(4).enumerate() {
        recs.push_str(&format!(
            "<li>{name} <span class=\"price\">{}</span> <small>{} bought today</small></li>\n",
            euros(*price),
            3 + ctx.below(0x4ec1 + i as u64, 60)
        ));
    }
    let flash = if in_burst(ctx, &[(42, 50)]) {
        let left = (ctx.time_at(51) - ctx.now()).max(0);
        format!(
            "<div class=\"flash\">Flash sale: 20% off lighting — ends in 00:{:02}:{:02}</div>\n",
            left / 60,
            left % 60
        )
    } else {
        String::new()
    };
    let body = format!(
        "<header><a href=\"/\">Hearth &amp; Loom</a> <a href=\"/basket\">Basket (0)</a></header>\n\
         <div class=\"banner\">{}</div>\n{flash}\
         <main><h1>New in: home</h1>\n<div id=\"grid\">\n{grid}</div></main>\n\
         <aside id=\"recommended\"><h2>Recommended for you</h2><ul>\n{recs}</ul></aside>\n\
         <footer>{} shoppers online</footer>\n",
        ctx.pick(0xba11, &GRID_BANNERS),
        grouped(200 + ctx.below(0x0711, 1800), ",")
    );
    Reply::html(document("en-IE", "New in: home – Hearth & Loom", "", &body))
}

// ---------------------------------------------------------------------------------------------
// chart-swap

static CHART_SWAP_CHANGES: [Change; 3] = [
    Change {
        at: 12,
        kind: Reorder,
        what: "positions 3 and 4 trade places",
    },
    Change {
        at: 40,
        kind: Reorder,
        what: "positions 7 and 8 trade places",
    },
    Change {
        at: 66,
        kind: Reorder,
        what: "positions 1 and 2 trade places",
    },
];

const CHART: [(&str, &str); 10] = [
    ("Glass Harbour", "The Lanterns"),
    ("Slow Comet", "Mira Okafor"),
    ("Paper Crowns", "Northbound"),
    ("Velvet Static", "Juno Reyes"),
    ("Salt & Honey", "The Amber Rooms"),
    ("Night Bus Home", "Kit Calloway"),
    ("Weather Vane", "Ostrich Bay"),
    ("Coldwater", "Lena Marsh"),
    ("Satellite Hearts", "Dune Theory"),
    ("Small Hours", "Felix Aran"),
];
const CHART_SWAPS: [(usize, usize); 3] = [(2, 3), (6, 7), (0, 1)];
const FAN_PICKS: [(&str, &str); 8] = [
    ("Coldwater", "Lena Marsh"),
    ("Tin Roof Rain", "Hollis"),
    ("Glass Harbour", "The Lanterns"),
    ("Lantern Festival", "Yoko Bright"),
    ("Small Hours", "Felix Aran"),
    ("Iron & Ivy", "Marlow"),
    ("Paper Crowns", "Northbound"),
    ("Blue Hour", "Sana Idris"),
];

fn chart_swap(ctx: &Ctx) -> Reply {
    let mut chart = CHART.to_vec();
    for &(a, b) in CHART_SWAPS.iter().take(ctx.version) {
        chart.swap(a, b);
    }
    let mut list = String::new();
    for (title, artist) in &chart {
        list.push_str(&format!(
            "<li><span class=\"title\">{}</span> – <span class=\"artist\">{artist}</span></li>\n",
            title.replace('&', "&amp;")
        ));
    }
    let mut fans = String::new();
    for (i, (title, artist)) in ctx.shuffled(0xfa45, &FAN_PICKS).iter().enumerate() {
        fans.push_str(&format!(
            "<li>{} – {artist} <small>{} votes</small></li>\n",
            title.replace('&', "&amp;"),
            grouped(100 + ctx.below(0xfa50 + i as u64, 5000), ",")
        ));
    }
    let (title, artist) = ctx.pick(0x0a1e, &FAN_PICKS);
    let body = format!(
        "<header><h1>Radio Meridian Top 10</h1><p>Week 53 · chart published Thursday 31 December 2026</p>\
         <p class=\"onair\">On air now: {} – {artist}</p></header>\n\
         <main><ol id=\"chart\">\n{list}</ol></main>\n\
         <aside><h2>Fan favourites</h2><ul id=\"fan-picks\">\n{fans}</ul></aside>\n",
        title.replace('&', "&amp;")
    );
    Reply::html(document(
        "en",
        "Top 10 – Radio Meridian",
        "<style>#chart{list-style:decimal}</style>\n",
        &body,
    ))
}

// ---------------------------------------------------------------------------------------------
// replica-docs

static REPLICA_DOCS_CHANGES: [Change; 3] = [
    Change {
        at: 9,
        kind: OneChar,
        what: "version 3.2.1 -> 3.2.2",
    },
    Change {
        at: 33,
        kind: Removed,
        what: "the deprecated endpoint's section is removed",
    },
    Change {
        at: 58,
        kind: Added,
        what: "a payouts endpoint is documented",
    },
];

/// How many requests behind the replica answering this request is, when a lagging replica
/// answers it: in two blocks of 12 requests in three, one run of 2 or 3 requests, never within 3
/// requests of a real change.
fn replica_lag(ctx: &Ctx) -> Option<u32> {
    if near_change(ctx, 3) {
        return None;
    }
    let block = u64::from(ctx.n / 12);
    if ctx.fixed(0x5a1e_0000 ^ block).is_multiple_of(3) {
        return None;
    }
    let start = (block as u32) * 12 + (ctx.fixed(0x5a1f_0000 ^ block) % 9) as u32;
    let len = 2 + (ctx.fixed(0x5a20_0000 ^ block) % 2) as u32;
    (start <= ctx.n && ctx.n < start + len).then(|| 9 + (ctx.fixed(0x5a21_0000 ^ block) % 6) as u32)
}

fn replica_docs(ctx: &Ctx) -> Reply {
    let (version, generated, node) = match replica_lag(ctx) {
        Some(lag) => (
            ctx.version_back(lag),
            ctx.time_at(ctx.n.saturating_sub(lag)),
            "docs-replica-3".to_string(),
        ),
        None => (
            ctx.version,
            ctx.now(),
            format!("docs-{}", 1 + ctx.below(0x40de, 2)),
        ),
    };
    let release = if version > 0 { "3.2.2" } else { "3.2.1" };
    let edited = [
        "18 December 2026",
        "31 December 2026",
        "1 January 2027",
        "1 January 2027",
    ][version.min(3)];
    let mut endpoints = String::from(
        "<section><h2>POST /v3/charges</h2><p>Creates a charge. Amounts are in the smallest \
         currency unit.</p></section>\n\
         <section><h2>GET /v3/charges/{id}</h2><p>Returns one charge.</p></section>\n\
         <section><h2>POST /v3/refunds</h2><p>Refunds a charge in full or in part.</p></section>\n\
         <section><h2>GET /v3/balances</h2><p>Returns the available and pending balances.</p></section>\n",
    );
    if version < 2 {
        endpoints.push_str(
            "<section class=\"deprecated\"><h2>GET /v3/balance</h2><p>Deprecated: use \
             GET /v3/balances. Will be removed on 1 March 2027.</p></section>\n",
        );
    }
    if version > 2 {
        endpoints.push_str(
            "<section><h2>POST /v3/payouts</h2><p>Sends funds to a connected bank account.</p>\
             </section>\n",
        );
    }
    let build = ["7f3a9c1", "a41e0d2", "c90b7e4", "e2d5f18"][version.min(3)];
    let body = format!(
        "<nav><a href=\"/docs\">Docs</a> › <a href=\"/docs/api\">API reference</a></nav>\n\
         <main id=\"content\">\n<h1>Payments API reference</h1>\n\
         <p class=\"version\">API version {release} · last edited {edited}</p>\n\
         <p>Rate limit: 100 requests per second per key.</p>\n{endpoints}</main>\n\
         <footer>Generated {} UTC by {node} · build {build}</footer>\n",
        utc(generated).format("%Y-%m-%d %H:%M:%S")
    );
    Reply::html(document("en", "Payments API reference", "", &body))
}

// ---------------------------------------------------------------------------------------------
// de-amtsblatt

static DE_AMTSBLATT_CHANGES: [Change; 3] = [
    Change {
        at: 16,
        kind: Added,
        what: "a notice is added at the top",
    },
    Change {
        at: 43,
        kind: InNoisyLine,
        what: "the council meeting moves a week, in its line with \"aktualisiert vor N Minuten\"",
    },
    Change {
        at: 71,
        kind: OneChar,
        what: "a fee 1.250,00 € -> 1.280,00 €",
    },
];

const AMT_NOTICES: [(&str, &str, &str); 5] = [
    (
        "28.12.2026",
        "Allgemeinverfügung zur Sperrung der Brückenstraße",
        "32-6410/2026",
    ),
    (
        "22.12.2026",
        "Bebauungsplan Nr. 114 „Am Mühlbach“ – öffentliche Auslegung",
        "61-2110/114",
    ),
    (
        "17.12.2026",
        "Haushaltssatzung der Gemeinde für das Haushaltsjahr 2027",
        "20-9020/2027",
    ),
    (
        "09.12.2026",
        "Änderung der Satzung über die Erhebung der Hundesteuer",
        "20-3310/2026",
    ),
    (
        "01.12.2026",
        "Jahresabschluss 2025 der Gemeindewerke",
        "80-1100/2025",
    ),
];

fn de_amtsblatt(ctx: &Ctx) -> Reply {
    // Central European Time.
    let t = utc(ctx.now() + 3600);
    let mut notices = String::new();
    let new = (
        "31.12.2026",
        "Bekanntmachung über die Räum- und Streupflicht im Winter",
        "32-1240/2026",
    );
    let shown: Vec<_> = (ctx.version > 0)
        .then_some(new)
        .into_iter()
        .chain(AMT_NOTICES)
        .collect();
    for (date, title, file) in shown {
        notices.push_str(&format!(
            "<li><span class=\"datum\">{date}</span> – <a href=\"/amtsblatt/{}\">{title}</a> \
             – Az. {file}</li>\n",
            file.replace('/', "-")
        ));
    }
    let (meeting, updated) = if ctx.version > 1 {
        ("Donnerstag, 21. Januar 2027, 18:00 Uhr", ctx.time_at(43))
    } else {
        (
            "Donnerstag, 14. Januar 2027, 18:00 Uhr",
            ctx.time_at(0) - 2 * 3600 - 600,
        )
    };
    let fee = if ctx.version > 2 {
        "1.280,00 €"
    } else {
        "1.250,00 €"
    };
    let visitors = 48_213 + u64::from(ctx.n) * 3 + ctx.below(0x815, 3);
    let tip = ctx.pick(
        0x717,
        &[
            "Tipp: Termine im Bürgerbüro online buchen",
            "Tipp: Sperrmüll kann online angemeldet werden",
            "Tipp: Der Abfallkalender 2027 ist erschienen",
            "Tipp: Hundemarken sind im Rathaus erhältlich",
        ],
    );
    let body = format!(
        "<header><h1>Gemeinde Mühlbach – Amtsblatt</h1>\
         <p class=\"stand\">Stand: {}, {}. {} {}, {:02}:{:02} Uhr</p></header>\n\
         <p class=\"tipp\">{tip}</p>\n\
         <div id=\"inhalt\">\n<h2>Öffentliche Bekanntmachungen</h2>\n<ul id=\"bekanntmachungen\">\n{notices}</ul>\n\
         <p id=\"sitzung\">Nächste Sitzung des Gemeinderats: {meeting} · aktualisiert {}</p>\n\
         <h2>Gebühren</h2>\n<table id=\"gebuehren\">\n\
         <tr><td>Bewohnerparkausweis (Jahr)</td><td>30,70 €</td></tr>\n\
         <tr><td>Hundesteuer, erster Hund (Jahr)</td><td>120,00 €</td></tr>\n\
         <tr><td>Sondernutzung Gehweg, Jahrespauschale</td><td>{fee}</td></tr>\n</table>\n</div>\n\
         <footer>Sie sind Besucher Nr. {}</footer>\n",
        DE_DAYS[weekday(&t)],
        t.day(),
        DE_MONTHS[month(&t)],
        t.year(),
        t.hour(),
        t.minute(),
        ago_de(ctx.now() - updated),
        grouped(visitors, ".")
    );
    Reply::html(document("de", "Amtsblatt – Gemeinde Mühlbach", "", &body))
}

// ---------------------------------------------------------------------------------------------
// jp-weather

static JP_WEATHER_CHANGES: [Change; 3] = [
    Change {
        at: 4,
        kind: OneChar,
        what: "tomorrow's forecast high 11℃ -> 12℃",
    },
    Change {
        at: 24,
        kind: Added,
        what: "a dry-air advisory is issued",
    },
    Change {
        at: 52,
        kind: Revert,
        what: "the advisory is lifted (back to no advisories)",
    },
];

fn jp_weather(ctx: &Ctx) -> Reply {
    // Japan Standard Time.
    let now = ctx.now() + 9 * 3600;
    let t = utc(now);
    let warning = if ctx.version == 2 {
        let issued = utc(ctx.time_at(24) + 9 * 3600);
        format!(
            "<p class=\"keiho\">乾燥注意報 発表中（{}月{}日 {}時{:02}分 発表）</p>",
            issued.month(),
            issued.day(),
            issued.hour(),
            issued.minute()
        )
    } else {
        "<p>現在、発表中の警報・注意報はありません。</p>".to_string()
    };
    let weather = [
        "晴れ",
        "晴れ時々曇り",
        "曇り",
        "曇り一時雨",
        "晴れ",
        "晴れ",
        "曇り時々晴れ",
    ];
    let highs = [10, 11, 9, 8, 10, 12, 11];
    let lows = [1, 2, 3, 4, 2, 1, 3];
    let rain = [0, 10, 30, 60, 10, 0, 20];
    let mut rows = String::new();
    let first = NaiveDate::from_ymd_opt(2027, 1, 1).unwrap_or_default();
    for (i, day) in first.iter_days().take(7).enumerate() {
        let high = if i == 1 && ctx.version > 0 {
            12
        } else {
            highs[i]
        };
        rows.push_str(&format!(
            "<tr><th>{}月{}日({})</th><td>{}</td><td>最高 {high}℃</td><td>最低 {}℃</td>\
             <td>降水確率 {}%</td></tr>\n",
            day.month(),
            day.day(),
            JA_DAYS[weekday(&day)],
            weather[i],
            lows[i],
            rain[i]
        ));
    }
    let temp = 40 + ctx.below(0x7e3, 40);
    let body = format!(
        "<header><h1>東京都 東京の天気</h1><p class=\"now\">{}年{}月{}日({}) {}時{:02}分 現在</p></header>\n\
         <section id=\"jikkyo\"><h2>現在の天気</h2><p>気温 {}.{}℃ 湿度 {}% {}の風 {}m/s</p></section>\n\
         <div id=\"forecast\">\n<p class=\"issued\">12月31日 17時00分 気象庁発表 · 最終更新 {}分前</p>\n\
         <section id=\"keiho\"><h2>警報・注意報</h2>{warning}</section>\n\
         <h2>週間天気予報</h2>\n<table id=\"yoho\">\n{rows}</table>\n</div>\n\
         <aside class=\"ad\">{}</aside>\n",
        t.year(),
        t.month(),
        t.day(),
        JA_DAYS[weekday(&t)],
        t.hour(),
        t.minute(),
        temp / 10,
        temp % 10,
        35 + ctx.below(0x4d1, 25),
        ctx.pick(0x3d, &["北", "北北西", "北西", "西北西"]),
        1 + ctx.below(0x3e, 6),
        (now % 600) / 60,
        ctx.pick(
            0xad,
            &[
                "冬の旅行は早めの予約がお得！",
                "初売りセール開催中",
                "スマホで天気をチェック",
                "花粉対策グッズ特集",
            ]
        )
    );
    Reply::html(document("ja", "東京の天気 - 週間天気予報", "", &body))
}

// ---------------------------------------------------------------------------------------------
// slow-tracking

static SLOW_TRACKING_CHANGES: [Change; 3] = [
    Change {
        at: 6,
        kind: Added,
        what: "a tracking event arrives in the late data",
    },
    Change {
        at: 20,
        kind: Added,
        what: "a tracking event arrives in the late data",
    },
    Change {
        at: 57,
        kind: Added,
        what: "\"Out for delivery\" arrives in the late data",
    },
];

/// The page's script: its configuration first, then its events, both answered late.
const TRACKING_SCRIPT: &str = r#"(async function () {
  var base = location.pathname;
  var app = document.getElementById('app');
  try {
    var cfg = await (await fetch(base + '/config.json')).json();
    var data = await (await fetch(base + '/events.json?locale=' + cfg.locale)).json();
    var html = '<p id="summary">Status: ' + data.status + ' · refreshed ' + data.refreshed + '</p><ol id="events">';
    data.events.forEach(function (e) { html += '<li>' + e.time + ' — ' + e.place + ' — ' + e.text + '</li>'; });
    app.innerHTML = html + '</ol><p class="eta">Estimated delivery: ' + data.eta + '</p>';
  } catch (err) {
    app.textContent = 'Tracking is unavailable right now.';
  }
})();"#;

fn slow_tracking(ctx: &Ctx) -> Reply {
    let body = format!(
        "<header><h1>Parcel tracking</h1><p>Tracking number 00340434161094042557</p></header>\n\
         <div id=\"app\"><p class=\"loading\">Loading tracking events…</p></div>\n\
         <aside class=\"chat\">Live chat: {} agents online</aside>\n\
         <script nonce=\"{}\">{TRACKING_SCRIPT}</script>\n",
        2 + ctx.below(0xc4a7, 14),
        ctx.token(0x4011, 22)
    );
    Reply::html(document("en-GB", "Track your parcel", "", &body))
}

fn slow_tracking_data(ctx: &Ctx, file: &str) -> Option<Reply> {
    let value = match file {
        "config.json" => json!({
            "locale": "en-GB",
            "pollSeconds": 30,
            "build": format!("web-{}", ctx.token(0xb1d, 7)),
        }),
        "events.json" => {
            let mut events = vec![
                ("Thu 31 Dec 09:12", "Bristol", "Label created"),
                ("Thu 31 Dec 17:40", "Bristol depot", "Picked up by courier"),
                ("Thu 31 Dec 21:05", "Swindon hub", "In transit"),
            ];
            let arrivals = [
                ("Reading sorting centre", "Arrived at sorting centre"),
                ("Reading sorting centre", "Departed sorting centre"),
                ("London SE1 delivery office", "Out for delivery"),
            ];
            let mut times = Vec::new();
            for (i, change) in ctx.page.changes.iter().enumerate().take(ctx.version) {
                let t = utc(ctx.time_at(change.at) - 120);
                times.push((
                    i,
                    format!(
                        "{} {} {} {:02}:{:02}",
                        &EN_DAYS[weekday(&t)][..3],
                        t.day(),
                        &EN_MONTHS[month(&t)][..3],
                        t.hour(),
                        t.minute()
                    ),
                ));
            }
            let mut owned: Vec<(String, &str, &str)> = events
                .drain(..)
                .map(|(t, p, x)| (t.to_string(), p, x))
                .collect();
            for (i, time) in times {
                owned.push((time, arrivals[i].0, arrivals[i].1));
            }
            owned.reverse();
            let status = owned.first().map_or("", |e| e.2);
            let now = utc(ctx.now());
            json!({
                "status": status,
                "refreshed": format!("{:02}:{:02}:{:02}", now.hour(), now.minute(), now.second()),
                "traceId": ctx.token(0x7ace, 32),
                "eta": "Friday 1 January, 10:00–14:00",
                "events": owned.iter().map(|(t, p, x)| json!({"time": t, "place": p, "text": x})).collect::<Vec<_>>(),
            })
        }
        _ => return None,
    };
    Some(Reply {
        status: 200,
        content_type: "application/json",
        body: value.to_string(),
        retry_after: None,
    })
}

// ---------------------------------------------------------------------------------------------
// server-clock

static SERVER_CLOCK_CHANGES: [Change; 1] = [Change {
    at: 35,
    kind: Added,
    what: "a notice about next spring's clock change",
}];

fn server_clock(ctx: &Ctx) -> Reply {
    // London: Greenwich Mean Time, the server's own clock.
    let t = utc(ctx.now());
    let (sunset, length) = if t.year() == 2026 {
        ("16:02", "7 h 56 min")
    } else {
        ("16:03", "7 h 57 min")
    };
    let notice = if ctx.version > 0 {
        "<p class=\"notice\">Note: Parliament is debating a bill to keep summer time all year; \
         the change above may not take place.</p>\n"
    } else {
        ""
    };
    let offset = ctx.below(0xc10c, 20);
    let body = format!(
        "<main>\n<h1>Time in London, United Kingdom now</h1>\n\
         <div id=\"clock\"><time datetime=\"{}\">{:02}:{:02}:{:02}</time>\n\
         <p class=\"date\">{}, {} {} {}, week {}, day {}</p>\n\
         <p class=\"sync\">Your clock is {}.{} seconds {}. Accuracy of synchronisation was ±0.0{} seconds.</p></div>\n\
         <section id=\"tz\"><h2>Time zone</h2>\n\
         <p class=\"zone\">Greenwich Mean Time (GMT), UTC +0</p>\n\
         <p class=\"dst\">Next clock change: Sunday 28 March 2027, 01:00 GMT → 02:00 BST (clocks go forward 1 hour)</p>\n\
         {notice}<p class=\"sun\">Sun: ↑ 08:06 ↓ {sunset} ({length})</p>\n</section>\n</main>\n",
        t.format("%Y-%m-%dT%H:%M:%SZ"),
        t.hour(),
        t.minute(),
        t.second(),
        EN_DAYS[weekday(&t)],
        t.day(),
        EN_MONTHS[month(&t)],
        t.year(),
        t.iso_week().week(),
        t.ordinal(),
        offset / 10,
        offset % 10,
        if ctx.chance(0xa4ed, 50) {
            "ahead"
        } else {
            "behind"
        },
        1 + ctx.below(0xacc, 9)
    );
    Reply::html(document("en-GB", "Time in London now", "", &body))
}

// ---------------------------------------------------------------------------------------------
// visitor-count

static VISITOR_COUNT_CHANGES: [Change; 1] = [Change {
    at: 11,
    kind: InNoisyLine,
    what: "the closing date moves, in its line with the visitor counter",
}];

fn visitor_count(ctx: &Ctx) -> Reply {
    let until = if ctx.version > 0 {
        "28 February 2027"
    } else {
        "14 February 2027"
    };
    let visitors = 12_345 + u64::from(ctx.n) * 9 + ctx.below(0x5151, 9);
    let likes = 4_213 + u64::from(ctx.n) / 3;
    let body = format!(
        "<header><a href=\"/\">City Museum of Photography</a></header>\n\
         <div id=\"exhibition\">\n<h1>Northern Light: Photographs 1890–1930</h1>\n\
         <p class=\"dates\">Open until {until} · {} visitors so far</p>\n\
         <p class=\"tickets\">Tickets €14, reduced €9, under 18s free. Open daily 10:00–18:00.</p>\n\
         <p class=\"live\">{} people are viewing this page</p>\n</div>\n\
         <p class=\"social\">♥ {} · Comments ({})</p>\n",
        grouped(visitors, ","),
        2 + ctx.below(0x1e3, 38),
        grouped(likes, ","),
        56 + ctx.n / 9
    );
    Reply::html(document(
        "en",
        "Northern Light – City Museum of Photography",
        "",
        &body,
    ))
}

// ---------------------------------------------------------------------------------------------
// token-links

static TOKEN_LINKS_CHANGES: [Change; 1] = [Change {
    at: 62,
    kind: Added,
    what: "a document is added to the list",
}];

fn token_links(ctx: &Ctx) -> Reply {
    let session = ctx.token(0x5e55, 24);
    let mut docs = vec![
        ("q3-2026.pdf", "Quarterly report Q3 2026 (PDF, 1.8 MB)"),
        ("h1-2026.pdf", "Half-year report 2026 (PDF, 2.6 MB)"),
        (
            "agm-2026.pdf",
            "Annual general meeting 2026: results of the votes (PDF, 0.3 MB)",
        ),
        ("annual-2025.pdf", "Annual report 2025 (PDF, 7.9 MB)"),
    ];
    if ctx.version > 0 {
        docs.insert(
            0,
            ("prelim-2026.pdf", "Preliminary results 2026 (PDF, 0.9 MB)"),
        );
    }
    let mut list = String::new();
    for (i, (file, text)) in docs.iter().enumerate() {
        list.push_str(&format!(
            "<li><a href=\"/files/{file}?session={session}&amp;utm_source=ir-site&amp;utm_medium=web\
             &amp;sig={}\">{text}</a></li>\n",
            ctx.token(0x5160 + i as u64, 40)
        ));
    }
    let body = format!(
        "<header><a href=\"/?session={session}\">Borealis Holdings plc</a> · \
         <a href=\"/investors?session={session}&amp;utm_source=nav\">Investors</a></header>\n\
         <main>\n<h1>Reports and presentations</h1>\n<section id=\"documents\">\n<ul>\n{list}</ul>\n\
         <p class=\"share\">Direct link (valid 15 minutes): \
         <code>https://ir.borealis.example/files/q3-2026.pdf?session={session}&amp;sig={}</code></p>\n\
         </section>\n\
         <form method=\"post\" action=\"/alerts/subscribe\"><input type=\"hidden\" name=\"csrf_token\" \
         value=\"{}\"><label>E-mail alerts <input type=\"email\" name=\"email\"></label>\
         <button>Subscribe</button></form>\n</main>\n\
         <footer>Support reference: REQ-{}</footer>\n",
        ctx.token(0x5170, 40),
        ctx.token(0xc5f, 32),
        ctx.token(0x4e9, 10).to_uppercase()
    );
    Reply::html(document(
        "en-GB",
        "Reports and presentations – Borealis Holdings",
        "",
        &body,
    ))
}

// ---------------------------------------------------------------------------------------------
// link-target

static LINK_TARGET_CHANGES: [Change; 2] = [
    Change {
        at: 27,
        kind: Attribute,
        what: "the download button's target 4.2.0 -> 4.2.1, its text the same",
    },
    Change {
        at: 68,
        kind: Attribute,
        what: "the download button's target 4.2.1 -> 4.3.0, its text the same",
    },
];

fn link_target(ctx: &Ctx) -> Reply {
    let file = ["4.2.0", "4.2.1", "4.3.0"][ctx.version.min(2)];
    let body = format!(
        "<header><a href=\"/\">Nimbus</a> <a href=\"/pricing?ref={}\">Pricing</a></header>\n\
         <main>\n<div id=\"download-box\">\n<h1>Download Nimbus Desktop</h1>\n\
         <p>The latest version for Windows 10 and 11.</p>\n\
         <a id=\"dl-latest\" class=\"button\" href=\"/files/nimbus-{file}-x64.msi\">Download for Windows (64-bit)</a>\n\
         <p class=\"other\">Also for <a href=\"/download/mac?ref={}\">macOS</a> and \
         <a href=\"/download/linux?ref={}\">Linux</a> · \
         <a href=\"/release-notes?utm_source=download&amp;utm_content={}\">Release notes</a></p>\n</div>\n\
         <p class=\"stats\">Downloaded {} times this week · fastest mirror: {} ({} ms)</p>\n</main>\n",
        ctx.token(0x11a, 12),
        ctx.token(0x11b, 12),
        ctx.token(0x11c, 12),
        ctx.token(0x11d, 16),
        grouped(18_400 + u64::from(ctx.n) * 7 + ctx.below(0xd1, 7), ","),
        ctx.pick(
            0x3177,
            &["eu-west-2", "eu-central-1", "us-east-1", "ap-south-1"]
        ),
        18 + ctx.below(0x3178, 120)
    );
    Reply::html(document("en", "Download Nimbus Desktop", "", &body))
}

// ---------------------------------------------------------------------------------------------
// job-board

static JOB_BOARD_CHANGES: [Change; 3] = [
    Change {
        at: 15,
        kind: Added,
        what: "a job is posted",
    },
    Change {
        at: 45,
        kind: Removed,
        what: "a job is taken down",
    },
    Change {
        at: 73,
        kind: OneChar,
        what: "a salary €62,000 -> €65,000, in its line with counters and a relative date",
    },
];

/// Role, company, city, salary, minutes before the first request it was posted.
const JOBS: [(&str, &str, &str, &str, i64); 6] = [
    (
        "Backend Engineer (Rust)",
        "Tidewater Analytics",
        "Berlin",
        "€72,000–€88,000",
        95,
    ),
    (
        "Data Analyst",
        "Kestrel Insurance",
        "Hamburg",
        "€62,000–€70,000",
        320,
    ),
    (
        "Frontend Developer",
        "Lumen Health",
        "Remote (EU)",
        "€58,000–€68,000",
        1_500,
    ),
    (
        "DevOps Engineer",
        "Northgate Freight",
        "Munich",
        "€66,000–€80,000",
        2_950,
    ),
    (
        "QA Engineer",
        "Pebble Games",
        "Leipzig",
        "€48,000–€56,000",
        4_400,
    ),
    (
        "Engineering Manager",
        "Orchard Bank",
        "Frankfurt",
        "€95,000–€115,000",
        8_700,
    ),
];
const PROMOTED: [(&str, &str, &str); 5] = [
    ("Sales Engineer", "Quartz Cloud", "€70,000 + bonus"),
    ("Solutions Architect", "Vantage Systems", "€90,000–€110,000"),
    ("Customer Success Manager", "Helio CRM", "€55,000–€65,000"),
    ("Security Engineer", "Bastion Labs", "€80,000–€95,000"),
    ("Product Designer", "Fable Studio", "€60,000–€72,000"),
];

fn challenge(ctx: &Ctx, host: &str) -> Reply {
    let body = document(
        "en",
        "Just a moment...",
        "",
        &format!(
            "<h1>{host}</h1>\n<h2>Checking if the site connection is secure</h2>\n\
             <p>{host} needs to review the security of your connection before proceeding.</p>\n\
             <p>Ray ID: {}</p>\n",
            ctx.token(0x7a9, 16)
        ),
    );
    match ctx.chance(0x403, 50) {
        true => Reply::status(403, body),
        false => Reply::html(body),
    }
}

fn job_board(ctx: &Ctx) -> Reply {
    if !near_change(ctx, 3) && ctx.chance(0xc4a1, 7) {
        return challenge(ctx, "jobs.fieldstone.example");
    }
    let now = ctx.now();
    let start = ctx.time_at(0);
    let mut jobs: Vec<(String, &str, &str, String, i64, u64)> = Vec::new();
    if ctx.version > 0 {
        jobs.push((
            "Site Reliability Engineer".to_string(),
            "Harbourline Logistics",
            "Hamburg",
            "€70,000–€82,000".to_string(),
            ctx.time_at(15) - 60,
            0,
        ));
    }
    for (i, &(role, company, city, salary, minutes)) in JOBS.iter().enumerate() {
        if i == 3 && ctx.version > 1 {
            continue;
        }
        let salary = if i == 1 && ctx.version > 2 {
            salary.replace("€62,000", "€65,000")
        } else {
            salary.to_string()
        };
        jobs.push((
            role.to_string(),
            company,
            city,
            salary,
            start - minutes * 60,
            i as u64 + 1,
        ));
    }
    let mut items: Vec<String> = jobs
        .iter()
        .map(|(role, company, city, salary, posted, k)| {
            let applicants = 3 + k * 11 + (u64::from(ctx.n) * (1 + k % 3)) / 7;
            format!(
                "<li class=\"job\"><h3>{role}</h3><span class=\"company\">{company}</span> · \
                 <span class=\"city\">{city}</span> · <span class=\"salary\">{salary}</span> · \
                 <span class=\"meta\">posted {} · {applicants} applicants</span></li>\n",
                ago_en(now - posted)
            )
        })
        .collect();
    for (i, (role, company, salary)) in ctx.shuffled(0x9e0, &PROMOTED).iter().take(2).enumerate() {
        let at = ctx.below(0x9e1 + i as u64, items.len() as u64 + 1) as usize;
        items.insert(
            at,
            format!(
                "<li class=\"job promoted\"><h3>{role}</h3><span class=\"company\">{company}</span> · \
                 <span class=\"salary\">{salary}</span> · <span class=\"meta\">Promoted</span></li>\n"
            ),
        );
    }
    let body = format!(
        "<header><h1>Fieldstone Jobs</h1><p>Software jobs in Germany</p></header>\n\
         <p class=\"count\">{} people searched for jobs in the last hour</p>\n\
         <main><ul id=\"jobs\">\n{}</ul></main>\n",
        grouped(900 + ctx.below(0x5ea, 700), ","),
        items.concat()
    );
    Reply::html(document("en", "Software jobs – Fieldstone Jobs", "", &body))
}

// ---------------------------------------------------------------------------------------------
// release-page

static RELEASE_PAGE_CHANGES: [Change; 3] = [
    Change {
        at: 8,
        kind: OneChar,
        what: "a typo fixed in the release notes",
    },
    Change {
        at: 30,
        kind: Added,
        what: "a new release is published",
    },
    Change {
        at: 53,
        kind: InNoisyLine,
        what: "an asset is replaced (3.1 MB -> 3.2 MB), in its line with its download count",
    },
];

const SPONSORS: [&str; 8] = [
    "@acme-corp",
    "@mkowalski",
    "@fernbrook",
    "@tessellate",
    "@jhartmann",
    "@driftwood-io",
    "@lpetrova",
    "@quokka-labs",
];

fn release_page(ctx: &Ctx) -> Reply {
    if !near_change(ctx, 3) && ctx.chance(0x502, 6) {
        return Reply::status(
            502,
            document(
                "en",
                "Unicorn! · Forgehub",
                "",
                "<h1>This page is taking too long to load.</h1>\n\
                 <p>Sorry about that. Please try refreshing and contact us if the problem persists.</p>\n",
            ),
        );
    }
    let now = ctx.now();
    let start = ctx.time_at(0);
    let mut releases = String::new();
    if ctx.version > 1 {
        let size = if ctx.version > 2 { "3.2 MB" } else { "3.1 MB" };
        let downloads = ctx.n.saturating_sub(30) * 4 + ctx.below(0xd0, 4) as u32;
        releases.push_str(&format!(
            "<div class=\"release\"><h2>v2.4.1 <span class=\"label\">Latest</span></h2>\
             <p class=\"meta\">released {} by ingot-bot · 9c41e07</p>\n\
             <div class=\"notes\"><ul><li>Fix checksum mismatch on Windows paths</li></ul></div>\n\
             <ul class=\"assets\"><li><a href=\"/ferrum/ingot/releases/download/v2.4.1/ingot-2.4.1-x86_64-linux.tar.gz\">\
             ingot-2.4.1-x86_64-linux.tar.gz</a> <span class=\"size\">{size}</span> \
             <span class=\"count\">{downloads} downloads</span></li></ul></div>\n",
            ago_en(now - ctx.time_at(30) + 20)
        ));
    }
    let typo = if ctx.version > 0 { "panic" } else { "pannic" };
    releases.push_str(&format!(
        "<div class=\"release\"><h2>v2.4.0{}</h2><p class=\"meta\">released {} by ingot-bot · 3be5a90</p>\n\
         <div class=\"notes\"><ul><li>Add a streaming decoder for large archives</li>\
         <li>Fix {typo} on empty input</li><li>Raise the minimum Rust version to 1.80</li></ul></div>\n\
         <ul class=\"assets\"><li><a href=\"/ferrum/ingot/releases/download/v2.4.0/ingot-2.4.0-x86_64-linux.tar.gz\">\
         ingot-2.4.0-x86_64-linux.tar.gz</a> <span class=\"size\">3.1 MB</span> \
         <span class=\"count\">{} downloads</span></li></ul></div>\n\
         <div class=\"release\"><h2>v2.3.2</h2><p class=\"meta\">released {} by ingot-bot · 51d0c2e</p>\n\
         <div class=\"notes\"><ul><li>Fix a crash when the output directory is read-only</li></ul></div>\n\
         <ul class=\"assets\"><li><a href=\"/ferrum/ingot/releases/download/v2.3.2/ingot-2.3.2-x86_64-linux.tar.gz\">\
         ingot-2.3.2-x86_64-linux.tar.gz</a> <span class=\"size\">3.0 MB</span> \
         <span class=\"count\">{} downloads</span></li></ul></div>\n",
        if ctx.version > 1 {
            ""
        } else {
            " <span class=\"label\">Latest</span>"
        },
        ago_en(now - (start - 5 * 3600 - 700)),
        grouped(1_180 + u64::from(ctx.n) * 2 + ctx.below(0xd1, 3), ","),
        ago_en(now - (start - 9 * 86_400)),
        grouped(23_905 + u64::from(ctx.n) / 2, ",")
    ));
    let sponsors = ctx.shuffled(0x5b0, &SPONSORS)[..3].join(" ");
    let body = format!(
        "<header><a href=\"/ferrum\">ferrum</a> / <a href=\"/ferrum/ingot\">ingot</a> \
         <span class=\"stars\">★ Star {}</span> <span>Watch 211</span></header>\n\
         <main><h1>Releases</h1>\n<div id=\"releases\">\n{releases}</div></main>\n\
         <aside class=\"sponsors\">Sponsored by {sponsors}</aside>\n",
        grouped(12_400 + u64::from(ctx.n) / 3, ",")
    );
    Reply::html(document("en", "Releases · ferrum/ingot", "", &body))
}

// ---------------------------------------------------------------------------------------------
// flight-status

static FLIGHT_STATUS_CHANGES: [Change; 3] = [
    Change {
        at: 18,
        kind: InNoisyLine,
        what: "on time -> delayed, in the status line with \"updated N min ago\" (beside a notice burst)",
    },
    Change {
        at: 44,
        kind: OneChar,
        what: "gate B12 -> B14",
    },
    Change {
        at: 75,
        kind: Revert,
        what: "delayed -> on time again",
    },
];

fn flight_status(ctx: &Ctx) -> Reply {
    if !near_change(ctx, 3) && ctx.chance(0x503, 6) {
        return Reply {
            retry_after: Some(30),
            ..Reply::status(
                503,
                document(
                    "en",
                    "Service unavailable",
                    "",
                    "<h1>Service temporarily unavailable</h1>\n<p>Flight information is being \
                     updated. Please try again in a few moments.</p>\n",
                ),
            )
        };
    }
    let now = ctx.now();
    let delayed = ctx.version == 1 || ctx.version == 2;
    let (status, estimated) = if delayed {
        ("Delayed – new departure 11:05", "11:05")
    } else {
        ("On time", "10:25")
    };
    let changed = match ctx.version {
        0 => ctx.time_at(0) - 7 * 60,
        1 | 2 => ctx.time_at(18),
        _ => ctx.time_at(75),
    };
    let gate = if ctx.version > 1 { "B14" } else { "B12" };
    let notice = if in_burst(ctx, &[(14, 22), (58, 61)]) {
        let t = utc(now + 3600 + 300);
        format!(
            "<p class=\"notice\">Boarding information will be shown shortly. Check again at {:02}:{:02}.</p>\n",
            t.hour(),
            t.minute()
        )
    } else {
        String::new()
    };
    let refreshed = utc(now + 3600);
    let body = format!(
        "<div id=\"flight\">\n<h1>LH 2472 Munich → London Heathrow</h1>\n\
         <p class=\"status\">Status: {status} · updated {}</p>\n{notice}\
         <table>\n<tr><th>Date</th><td>Friday 1 January 2027</td></tr>\n\
         <tr><th>Departure</th><td>scheduled 10:25, estimated {estimated}</td></tr>\n\
         <tr><th>Terminal / gate</th><td>2 / {gate}</td></tr>\n\
         <tr><th>Arrival</th><td>scheduled 11:30 (local time)</td></tr>\n\
         <tr><th>Aircraft</th><td>Airbus A320neo</td></tr>\n</table>\n\
         <p class=\"refreshed\">Last refreshed {:02}:{:02}:{:02}</p>\n</div>\n\
         <aside><p>Inbound aircraft: {}.{}°N {}.{}°E, altitude {} ft</p>\
         <p>Weather in London: {} °C, {}</p></aside>\n",
        ago_en(now - changed),
        refreshed.hour(),
        refreshed.minute(),
        refreshed.second(),
        44 + ctx.below(0xa1, 5),
        ctx.below(0xa2, 10),
        8 + ctx.below(0xa3, 4),
        ctx.below(0xa4, 10),
        grouped(31_000 + ctx.below(0xa5, 60) * 100, ","),
        4 + ctx.below(0xa6, 5),
        ctx.pick(0xa7, &["light rain", "overcast", "drizzle", "mist"])
    );
    Reply::html(document("en", "LH 2472 flight status", "", &body))
}

// ---------------------------------------------------------------------------------------------

/// The second corpus.
pub static PAGES2: [Page; 15] = [
    Page {
        name: "news-wire",
        site: "a city news list with relative times and a Trending box",
        noise: "relative times on every headline, reshuffled Trending with reader counts, a live ticker in bursts, the update time",
        x_path: Some("//ul[@id='latest']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &NEWS_WIRE_CHANGES,
        render: news_wire,
        resource: None,
    },
    Page {
        name: "price-api",
        site: "a JSON product API",
        noise: "keys in a new order every response, numbers spelled 4, 4.0 or 4e0, a request id, a timestamp, the serving node",
        x_path: None,
        regex: Some(r#""(?:currency|discount_pct|name|price|sku|stock)":(?:"[^"]*"|[-+.0-9eE]+)"#),
        dynamic: false,
        watch_links: false,
        changes: &PRICE_API_CHANGES,
        render: price_api,
        resource: None,
    },
    Page {
        name: "shop-grid",
        site: "a home-goods shop's product grid",
        noise: "a rotating banner, Recommended for you (the grid's products among others), counters, a flash-sale countdown in a burst",
        x_path: Some("//div[@id='grid']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &SHOP_GRID_CHANGES,
        render: shop_grid,
        resource: None,
    },
    Page {
        name: "chart-swap",
        site: "a radio station's weekly top 10",
        noise: "a Fan favourites list shuffled every request with vote counts, the song on air",
        x_path: Some("//ol[@id='chart']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &CHART_SWAP_CHANGES,
        render: chart_swap,
        resource: None,
    },
    Page {
        name: "replica-docs",
        site: "API documentation behind a lagging replica",
        noise: "a replica 9-14 requests behind answers runs of 2-3 requests, the generation time and node",
        x_path: Some("//main[@id='content']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &REPLICA_DOCS_CHANGES,
        render: replica_docs,
        resource: None,
    },
    Page {
        name: "de-amtsblatt",
        site: "a German municipality's notice board",
        noise: "German date and time of the page, \"aktualisiert vor N Minuten\", a visitor counter, a rotating tip",
        x_path: Some("//div[@id='inhalt']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &DE_AMTSBLATT_CHANGES,
        render: de_amtsblatt,
        resource: None,
    },
    Page {
        name: "jp-weather",
        site: "a Japanese weather forecast",
        noise: "Japanese date and time, current observations, \"最終更新 N分前\", a rotating ad",
        x_path: Some("//div[@id='forecast']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &JP_WEATHER_CHANGES,
        render: jp_weather,
        resource: None,
    },
    Page {
        name: "slow-tracking",
        site: "a parcel-tracking page filled by two late requests",
        noise: "the data's refresh time, a trace id, a script nonce, agents online",
        x_path: Some("//ol[@id='events']"),
        regex: None,
        dynamic: true,
        watch_links: false,
        changes: &SLOW_TRACKING_CHANGES,
        render: slow_tracking,
        resource: Some(slow_tracking_data),
    },
    Page {
        name: "server-clock",
        site: "a \"time now\" page",
        noise: "the server's time to the second, the date and day of the year, the visitor's clock offset, sunset moving at midnight",
        x_path: Some("//section[@id='tz']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &SERVER_CLOCK_CHANGES,
        render: server_clock,
        resource: None,
    },
    Page {
        name: "visitor-count",
        site: "a museum exhibition page",
        noise: "visitors so far, people viewing, likes and comments counters",
        x_path: Some("//div[@id='exhibition']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &VISITOR_COUNT_CHANGES,
        render: visitor_count,
        resource: None,
    },
    Page {
        name: "token-links",
        site: "an investor-relations documents page",
        noise: "session ids, utm parameters and signatures in links and a shown link, a CSRF token, a support reference",
        x_path: Some("//section[@id='documents']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &TOKEN_LINKS_CHANGES,
        render: token_links,
        resource: None,
    },
    Page {
        name: "link-target",
        site: "a desktop app's download page",
        noise: "ref and utm tokens in the other links, a download counter, the fastest mirror",
        x_path: Some("//a[@id='dl-latest']/@href"),
        regex: None,
        dynamic: false,
        watch_links: true,
        changes: &LINK_TARGET_CHANGES,
        render: link_target,
        resource: None,
    },
    Page {
        name: "job-board",
        site: "a job board's listings",
        noise: "relative posting dates, applicant counts, promoted listings at random places, a bot challenge (200 or 403)",
        x_path: Some("//ul[@id='jobs']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &JOB_BOARD_CHANGES,
        render: job_board,
        resource: None,
    },
    Page {
        name: "release-page",
        site: "a code-hosting project's releases",
        noise: "relative release dates, star and download counters, a sponsors box, a 502 error page",
        x_path: Some("//div[@id='releases']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &RELEASE_PAGE_CHANGES,
        render: release_page,
        resource: None,
    },
    Page {
        name: "flight-status",
        site: "an airline's flight status",
        noise: "\"updated N min ago\", the refresh time, a live position, a boarding notice in bursts, a 503 with Retry-After",
        x_path: Some("//div[@id='flight']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &FLIGHT_STATUS_CHANGES,
        render: flight_status,
        resource: None,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn body(seed: u64, page: &Page, n: u32) -> Reply {
        (page.render)(&Ctx::new(seed, page, n))
    }

    /// The page with `version` forced (the same noise as request `n`'s).
    fn forced(page: &Page, n: u32, version: usize) -> String {
        let ctx = Ctx {
            seed: 7,
            n,
            page,
            version,
        };
        let mut out = (page.render)(&ctx).body;
        if let Some(resource) = page.resource {
            for file in ["config.json", "events.json"] {
                out.push_str(&resource(&ctx, file).map(|r| r.body).unwrap_or_default());
            }
        }
        out
    }

    #[test]
    fn names_are_unique_short_and_not_the_first_corpus_s() {
        let first: Vec<&str> = super::super::pages::PAGES.iter().map(|p| p.name).collect();
        for (i, page) in PAGES2.iter().enumerate() {
            assert!(page.name.len() <= 16, "{}", page.name);
            assert!(!first.contains(&page.name), "{}", page.name);
            assert!(
                PAGES2[..i].iter().all(|p| p.name != page.name),
                "{}",
                page.name
            );
            assert!(
                page.x_path.is_some() != page.regex.is_some(),
                "{}",
                page.name
            );
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_pages_and_another_seed_other_noise() {
        for page in &PAGES2 {
            let mut differ = 0;
            for n in 1..=80 {
                let a = body(1, page, n);
                assert_eq!(a.body, body(1, page, n).body, "{} at {n}", page.name);
                if a.body != body(2, page, n).body {
                    differ += 1;
                }
            }
            assert!(
                differ >= 20,
                "{}: seeds 1 and 2 differ on {differ} requests",
                page.name
            );
        }
    }

    #[test]
    fn every_real_change_shows_in_the_page() {
        for page in &PAGES2 {
            assert!(!page.changes.is_empty(), "{}", page.name);
            for (i, change) in page.changes.iter().enumerate() {
                assert_eq!(page.version_at(change.at), i + 1, "{}", page.name);
                assert_ne!(
                    forced(page, change.at, i),
                    forced(page, change.at, i + 1),
                    "{}: change {i} ({})",
                    page.name,
                    change.what
                );
            }
        }
    }

    #[test]
    fn changes_come_early_in_the_middle_and_late() {
        let ats: Vec<u32> = PAGES2
            .iter()
            .flat_map(|p| p.changes.iter().map(|c| c.at))
            .collect();
        assert!(ats.iter().filter(|&&a| (4..=20).contains(&a)).count() >= 8);
        assert!(ats.iter().filter(|&&a| (30..=50).contains(&a)).count() >= 8);
        assert!(ats.iter().filter(|&&a| (60..=77).contains(&a)).count() >= 8);
        // Scored at the default 80 checks and window 3.
        assert!(ats.iter().all(|&a| a + 3 <= 80));
    }

    #[test]
    fn error_and_challenge_pages_stay_away_from_real_changes_and_do_come() {
        let mut errors = 0;
        for seed in 1..=5 {
            for page in &PAGES2 {
                for n in 1..=90 {
                    let reply = body(seed, page, n);
                    let bad = reply.status != 200 || reply.body.contains("Just a moment");
                    if bad {
                        errors += 1;
                        assert!(
                            page.changes.iter().all(|c| c.at.abs_diff(n) > 3),
                            "{} at {n}",
                            page.name
                        );
                    }
                }
            }
        }
        assert!(errors > 20, "{errors}");
    }

    #[test]
    fn the_replica_serves_older_versions_but_never_near_a_change() {
        let page = PAGES2
            .iter()
            .find(|p| p.name == "replica-docs")
            .expect("replica-docs");
        let mut reverted = 0;
        for seed in 1..=5 {
            for n in 1..=80 {
                let ctx = Ctx::new(seed, page, n);
                let Some(lag) = replica_lag(&ctx) else {
                    continue;
                };
                assert!(page.changes.iter().all(|c| c.at.abs_diff(n) > 3));
                if ctx.version_back(lag) < ctx.version {
                    reverted += 1;
                    assert!(body(seed, page, n).body.contains("docs-replica-3"));
                }
            }
        }
        assert!(reverted >= 5, "{reverted}");
    }

    #[test]
    fn the_api_s_numbers_are_equal_whatever_their_spelling() {
        let page = PAGES2
            .iter()
            .find(|p| p.name == "price-api")
            .expect("price-api");
        let mut spellings = std::collections::HashSet::new();
        for n in 1..=80 {
            let text = body(3, page, n).body;
            let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
            let price = [89.0, 79.0, 79.0, 84.5][page.version_at(n)];
            assert_eq!(value["price"].as_f64(), Some(price), "{text}");
            assert_eq!(value["stock"].as_f64(), Some(4.0), "{text}");
            assert_eq!(value["rating"]["count"].as_f64(), Some(1203.0), "{text}");
            assert_eq!(value.get("discount_pct").is_some(), n < 38);
            let stock = text.split("\"stock\":").nth(1).unwrap_or("");
            spellings.insert(stock.split([',', '}']).next().unwrap_or("").to_string());
        }
        assert_eq!(
            spellings,
            ["4", "4.0", "4e0"].map(String::from).into_iter().collect()
        );
    }

    #[test]
    fn the_link_target_changes_only_in_its_href() {
        let page = PAGES2
            .iter()
            .find(|p| p.name == "link-target")
            .expect("link-target");
        let text = |v| {
            let b = forced(page, 27, v);
            // The text of the download button and everything but the one href.
            b.replace("4.2.0", "X").replace("4.2.1", "X")
        };
        assert_eq!(text(0), text(1));
    }
}
