//! The pages of the noisy-page corpus, one generator each: a shop product, a news front page, a
//! forum thread, a status page, a price list, a ranked chart, an A/B-tested pricing page, a
//! changelog behind a stale replica, ticket sales behind a bot manager, opening hours behind
//! maintenance windows, a rendered events page fed by XHR, a careers page full of tokens, a
//! recipe in Unicode variants, a blog post under cookie banners, an out-of-stock product among
//! restock decoys, a JSON API and a quiet control page.
//!
//! Each generator draws its noise from [`Ctx`] (seed and request count) and shows the facts of
//! `ctx.version` (how many of the page's real changes are visible), so the schedule declared
//! beside it is the truth the bench scores against.

use super::corpus::{Change, ChangeKind::*, Ctx, Page, Reply};
use chrono::{DateTime, Datelike, Timelike, Utc};

fn time(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(secs, 0).unwrap_or_default()
}

const MONTHS_EN: [&str; 12] = [
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
const MONTHS_DE: [&str; 12] = [
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
const MONTHS_FR: [&str; 12] = [
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
];
const DAYS_EN: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn date_en_us(t: DateTime<Utc>) -> String {
    format!(
        "{}, {} {}, {}",
        DAYS_EN[t.weekday().num_days_from_monday() as usize],
        MONTHS_EN[t.month0() as usize],
        t.day(),
        t.year()
    )
}

fn date_en_gb(t: DateTime<Utc>) -> String {
    format!(
        "{} {} {}",
        t.day(),
        MONTHS_EN[t.month0() as usize],
        t.year()
    )
}

fn date_de(t: DateTime<Utc>) -> String {
    format!(
        "{:02}.{:02}.{}, {:02}:{:02} Uhr",
        t.day(),
        t.month(),
        t.year(),
        t.hour(),
        t.minute()
    )
}

fn date_de_long(t: DateTime<Utc>) -> String {
    format!(
        "{}. {} {}",
        t.day(),
        MONTHS_DE[t.month0() as usize],
        t.year()
    )
}

fn date_fr(t: DateTime<Utc>) -> String {
    format!(
        "{} {} {} à {}h{:02}",
        t.day(),
        MONTHS_FR[t.month0() as usize],
        t.year(),
        t.hour(),
        t.minute()
    )
}

fn date_ja(t: DateTime<Utc>) -> String {
    format!(
        "{}年{}月{}日 {:02}:{:02}",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute()
    )
}

fn iso(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// "3 minutes ago", "1 hour ago", "just now" for an age in seconds.
fn ago_en(secs: i64) -> String {
    match secs {
        s if s < 45 => "just now".into(),
        s if s < 90 => "1 minute ago".into(),
        s if s < 3600 => format!("{} minutes ago", (s + 30) / 60),
        s if s < 7200 => "1 hour ago".into(),
        s => format!("{} hours ago", s / 3600),
    }
}

fn ago_de(secs: i64) -> String {
    match secs {
        s if s < 60 => "gerade eben".into(),
        s if s < 120 => "vor 1 Minute".into(),
        s if s < 3600 => format!("vor {} Minuten", s / 60),
        s => format!("vor {} Std.", s / 3600),
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64, sep: &str) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push_str(sep);
        }
        out.push(c);
    }
    out
}

/// The page chrome most sites share: a head with per-request tokens and hashed class names
/// (a CSS-in-JS build), a nav, the body, a footer with the (rolling) year.
fn layout(ctx: &Ctx, title: &str, site: &str, body: &str) -> String {
    let class = format!("css-{}", ctx.token(0xc1a5, 6));
    let year = time(ctx.now()).year();
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <meta name=\"csrf-token\" content=\"{csrf}\"><link rel=\"stylesheet\" href=\"/static/app.{build}.css\">\
         <script nonce=\"{nonce}\">window.__SESSION__=\"{sid}\";</script></head>\
         <body class=\"{class}\"><header class=\"{class}-h\"><a href=\"/?sid={sid}\">{site}</a> \
         <nav><a href=\"/\">Home</a> <a href=\"/help\">Help</a> <a href=\"/account?sid={sid}\">Account</a></nav></header>\
         <main class=\"{class}-m\">{body}</main>\
         <footer class=\"{class}-f\"><p>© {year} {site}. All rights reserved.</p></footer></body></html>",
        csrf = ctx.token(0xc5f, 32),
        build = ctx.token(0xb1d, 8),
        nonce = ctx.token(0x1011, 16),
        sid = ctx.token(0x5e55, 24),
    )
}

/// A cookie banner in one of the wordings consent tools rotate through.
fn cookie_banner(ctx: &Ctx) -> String {
    let text = ctx.pick(
        0xc00c,
        &[
            "We use cookies to improve your experience. By continuing you agree to our use of cookies.",
            "This site uses cookies for analytics and personalised content. Accept all or manage your choices.",
            "We and our 842 partners store and access information on your device.",
            "",
        ],
    );
    if text.is_empty() {
        return String::new();
    }
    format!(
        "<div id=\"cookie-consent\" role=\"dialog\"><p>{text}</p><button>Accept all</button> <button>Manage choices</button></div>"
    )
}

// ---------------------------------------------------------------- 1. shop product

static SHOP_CHANGES: [Change; 4] = [
    Change {
        at: 14,
        kind: OneChar,
        what: "price $129.99 -> $128.99",
    },
    Change {
        at: 30,
        kind: InNoisyLine,
        what: "'In stock' -> 'Only 2 left' beside the sold counter",
    },
    Change {
        at: 47,
        kind: Revert,
        what: "price back to $129.99",
    },
    Change {
        at: 63,
        kind: Removed,
        what: "sentence about the descaling kit removed",
    },
];

fn shop(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let price = if v == 1 || v == 2 {
        "$128.99"
    } else {
        "$129.99"
    };
    let stock = if v >= 2 {
        "Only 2 left in stock"
    } else {
        "In stock"
    };
    let sold = 8 + ctx.below(1, 30);
    let viewing = 3 + ctx.below(2, 40);
    let delivery = time(ctx.now() + 4 * 86_400);
    let kit = if v >= 4 {
        ""
    } else {
        " Includes a free descaling kit."
    };
    let products = [
        "Milk Frother Pro",
        "Burr Grinder 60",
        "Tamper Set",
        "Knock Box",
        "Descaler 500 ml",
        "Cup Warmer",
        "Barista Jug",
        "Bean Vault",
        "Scale Mini",
        "Cleaning Tablets",
        "Portafilter 58",
        "Water Filter",
    ];
    let recs: String = ctx
        .shuffled(3, &products)
        .iter()
        .take(4)
        .map(|p| {
            format!(
                "<li><a href=\"/p/{}\">{p}</a> ${}.99</li>",
                p.len(),
                9 + p.len()
            )
        })
        .collect();
    let ad = ctx.pick(
        4,
        &[
            "Sponsored: Fresh beans delivered monthly — 20% off your first box",
            "Sponsored: Upgrade your kitchen with SteelLine appliances",
            "Sponsored: Free shipping on orders over $50 this week",
        ],
    );
    let body = format!(
        "{banner}<nav class=\"crumbs\">Home › Kitchen › Coffee › Espresso machines</nav>\
         <div id=\"buy-box\"><h1>Aurora Espresso Machine, 15 bar</h1>\
         <p class=\"price\">{price}</p>\
         <p class=\"stock\">{stock} — {sold} bought in the last hour</p>\
         <p class=\"delivery\">FREE delivery {delivery}</p>\
         <input type=\"hidden\" name=\"cart_token\" value=\"{cart}\"><button>Add to cart</button></div>\
         <p class=\"viewers\">{viewing} people are looking at this right now</p>\
         <div id=\"description\"><h2>About this item</h2><p>Brews café-quality espresso with a 15 bar \
         pump and a steam wand for milk drinks.{kit} The 1.8 litre tank is removable.</p></div>\
         <aside class=\"ad\">{ad}</aside>\
         <section class=\"recs\"><h2>Customers also bought</h2><ul>{recs}</ul></section>",
        banner = cookie_banner(ctx),
        delivery = date_en_us(delivery),
        cart = ctx.token(5, 20),
    );
    Reply::html(layout(ctx, "Aurora Espresso Machine", "Kitchenly", &body))
}

// ---------------------------------------------------------------- 2. news front page

static NEWS_CHANGES: [Change; 4] = [
    Change {
        at: 18,
        kind: OneChar,
        what: "headline: 14 schools -> 15 schools",
    },
    Change {
        at: 36,
        kind: Removed,
        what: "standfirst sentence removed",
    },
    Change {
        at: 52,
        kind: InNoisyLine,
        what: "second author added in the byline beside 'Updated N minutes ago'",
    },
    Change {
        at: 68,
        kind: Revert,
        what: "headline back to 14 schools",
    },
];

fn news(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let schools = if (1..4).contains(&v) { 15 } else { 14 };
    let standfirst = if v >= 2 {
        "Roads in the north of the county remain closed."
    } else {
        "Roads in the north of the county remain closed. Buses will run a reduced timetable until Monday."
    };
    let authors = if v >= 3 {
        "Ana Ruiz and Tom Park"
    } else {
        "Ana Ruiz"
    };
    let now = ctx.now();
    // The story was last updated every 7 virtual minutes.
    let updated = ago_en(now % 420 + 30);
    let headlines = [
        "Council approves new cycle lanes",
        "Local bakery wins national award",
        "Hospital car park fees to rise",
        "Rail line reopens after repairs",
        "School choir to sing at cathedral",
        "Harbour cleanup draws hundreds",
        "Library extends weekend hours",
        "Storm damage bill reaches £2m",
        "Market traders protest rent rise",
        "New bridge design unveiled",
    ];
    // A live feed: a new item every third request.
    let newest = ctx.n / 3;
    let latest: String = (0..5)
        .map(|i| {
            let item = newest.saturating_sub(i);
            let h = headlines[(item as usize * 7) % headlines.len()];
            format!(
                "<li><time>{}</time> {h} ({})</li>",
                ago_en(i64::from(i) * 190 + (now % 60)),
                item
            )
        })
        .collect();
    let most_read: String = ctx
        .shuffled(2, &headlines[..6])
        .iter()
        .map(|h| format!("<li>{h}</li>"))
        .collect();
    let ad = ctx.pick(
        3,
        &[
            "Advertisement: Winter sale — up to 50% off sofas",
            "Advertisement: Switch your energy supplier and save",
            "Advertisement: Book your spring holiday today",
        ],
    );
    let body = format!(
        "<p class=\"dateline\">{date} · Now {temp}°C</p>\
         <article class=\"lead\"><h1>Storm closes {schools} schools across the county</h1>\
         <p class=\"standfirst\">{standfirst}</p>\
         <p class=\"byline\">By {authors} · Updated {updated}</p></article>\
         <section class=\"latest\"><h2>Latest</h2><ul>{latest}</ul></section>\
         <aside class=\"ad\">{ad}</aside>\
         <section class=\"most-read\"><h2>Most read</h2><ol>{most_read}</ol></section>",
        date = date_en_us(time(now)),
        temp = 1 + ctx.below(1, 6),
    );
    Reply::html(layout(
        ctx,
        "The Daily Meridian",
        "The Daily Meridian",
        &body,
    ))
}

// ---------------------------------------------------------------- 3. forum thread (German)

static FORUM_CHANGES: [Change; 4] = [
    Change {
        at: 16,
        kind: Added,
        what: "a new reply",
    },
    Change {
        at: 33,
        kind: OneChar,
        what: "pressure 1,5 bar -> 1,6 bar in a reply",
    },
    Change {
        at: 50,
        kind: Removed,
        what: "a sentence removed by a moderator",
    },
    Change {
        at: 66,
        kind: Revert,
        what: "pressure back to 1,5 bar",
    },
];

fn forum(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let now = ctx.now();
    let first = if v >= 3 {
        "Seit gestern tropft es unter meiner Gastherme. Was kann ich selbst prüfen?"
    } else {
        "Seit gestern tropft es unter meiner Gastherme. Der Installateur kommt erst nächste Woche. Was kann ich selbst prüfen?"
    };
    let bar = if v == 2 || v == 3 { "1,6" } else { "1,5" };
    let mut posts = vec![
        ("heizungsneuling", now - 5400, first.to_string()),
        (
            "thermo_klaus",
            now - 3000,
            format!("Prüf zuerst den Anlagendruck am Manometer, er sollte bei {bar} bar liegen."),
        ),
    ];
    if v >= 1 {
        posts.push((
            "anna_s",
            now - 900,
            "Bei mir war es das Sicherheitsventil. Tausch kostet etwa 40 Euro.".to_string(),
        ));
    }
    let posts: String = posts
        .iter()
        .map(|(user, at, text)| {
            format!(
                "<div class=\"post\"><div class=\"meta\"><a href=\"/u/{user}?sid={sid}\">{user}</a> · {abs} ({rel})</div>\
                 <div class=\"post-body\">{text}</div></div>",
                sid = ctx.token(7, 16),
                abs = date_de(time(*at)),
                rel = ago_de(now - at),
            )
        })
        .collect();
    let body = format!(
        "<h1>Heizung tropft – was tun?</h1><p class=\"stats\">{views} Aufrufe · {online} Benutzer online · Stand: {date}</p>\
         {posts}<p class=\"similar\">Ähnliche Themen: {similar}</p>",
        views = thousands(1200 + u64::from(ctx.n) * 3 + ctx.below(1, 3), "."),
        online = 40 + ctx.below(2, 30),
        date = date_de_long(time(now)),
        similar = ctx
            .shuffled(
                3,
                &[
                    "Therme verliert Druck",
                    "Heizkörper entlüften",
                    "Warmwasser zu kalt",
                    "Brenner taktet"
                ]
            )
            .join(", "),
    );
    Reply::html(layout(
        ctx,
        "Heizung tropft – was tun? – HausForum",
        "HausForum",
        &body,
    ))
}

// ---------------------------------------------------------------- 4. status page

static STATUS_CHANGES: [Change; 4] = [
    Change {
        at: 20,
        kind: InNoisyLine,
        what: "API: Operational -> Degraded performance, beside its jittering uptime",
    },
    Change {
        at: 38,
        kind: Revert,
        what: "API back to Operational",
    },
    Change {
        at: 55,
        kind: Added,
        what: "an incident posted",
    },
    Change {
        at: 71,
        kind: Removed,
        what: "the incident's update sentence removed",
    },
];

fn status(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let api = if v == 1 {
        "Degraded performance"
    } else {
        "Operational"
    };
    let uptime = |salt| format!("99.9{:02}%", 70 + ctx.below(salt, 29));
    let components = [
        ("API", api),
        ("Dashboard", "Operational"),
        ("Webhooks", "Operational"),
        ("EU storage", "Operational"),
    ];
    let items: String = components
        .iter()
        .enumerate()
        .map(|(i, (name, state))| {
            format!(
                "<li>{name} — {state} — uptime {}</li>",
                uptime(10 + i as u64)
            )
        })
        .collect();
    let incident = match v {
        0..=2 => String::new(),
        3 => "<div class=\"incident\"><h3>Elevated webhook latency</h3><p>We are investigating delayed webhook deliveries. Next update in 30 minutes.</p></div>".into(),
        _ => "<div class=\"incident\"><h3>Elevated webhook latency</h3><p>We are investigating delayed webhook deliveries.</p></div>".into(),
    };
    let now = time(ctx.now());
    let body = format!(
        "<h1>Nimbus Cloud status</h1><p class=\"refreshed\">Last updated {secs} seconds ago · {ja}</p>\
         <ul id=\"components\">{items}</ul><section id=\"incidents\">{incident}</section>\
         <p class=\"generated\">Page generated at {iso} by edge {edge}</p>",
        secs = 2 + ctx.below(1, 58),
        ja = date_ja(now),
        iso = iso(now),
        edge = ctx.pick(2, &["fra-3", "ams-1", "lhr-2", "cdg-4"]),
    );
    Reply::html(layout(ctx, "Nimbus Cloud Status", "Nimbus Cloud", &body))
}

// ---------------------------------------------------------------- 5. price list (French)

static PRICES_CHANGES: [Change; 4] = [
    Change {
        at: 15,
        kind: OneChar,
        what: "Perceuse 1 249,90 € -> 1 249,99 €",
    },
    Change {
        at: 32,
        kind: Removed,
        what: "the 'Ponceuse' row removed",
    },
    Change {
        at: 49,
        kind: Revert,
        what: "Perceuse back to 1 249,90 €",
    },
    Change {
        at: 64,
        kind: InNoisyLine,
        what: "Scie 84,40 € -> 86,40 € in a line whose number format varies",
    },
];

fn prices(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let drill = if v == 1 || v == 2 { 124_999 } else { 124_990 };
    let saw = if v >= 4 { 8_640 } else { 8_440 };
    let mut rows: Vec<(&str, u64)> = vec![
        ("Perceuse à percussion 18 V", drill),
        ("Scie sauteuse 650 W", saw),
        ("Ponceuse excentrique", 12_950),
        ("Visseuse compacte", 7_990),
        ("Meuleuse d'angle 125 mm", 5_490),
        ("Établi pliant", 214_900),
    ];
    if v >= 2 {
        rows.retain(|r| !r.0.starts_with("Ponceuse"));
    }
    let row_html: String = rows
        .iter()
        .enumerate()
        .map(|(i, (name, cents))| {
            // The same price in the formats the shop's templates and CDN edges produce: the
            // thousands separator as a space, a no-break space or a narrow no-break space, and
            // the currency as a sign or a code, before or after.
            let sep = ctx.pick(20 + i as u64, &[" ", "\u{a0}", "\u{202f}"]);
            let number = format!("{},{:02}", thousands(cents / 100, sep), cents % 100);
            let price = match ctx.below(40 + i as u64, 3) {
                0 => format!("{number}\u{a0}€"),
                1 => format!("{number} EUR"),
                _ => format!("€{number}"),
            };
            format!("<tr><td>{name}</td><td>{price}</td></tr>")
        })
        .collect();
    let body = format!(
        "<h1>Tarifs location d'outillage</h1><p>Mis à jour le {date}</p>\
         <table id=\"tarifs\"><tr><th>Article</th><th>Prix TTC</th></tr>{row_html}</table>\
         <p class=\"promo\">{promo}</p>",
        date = date_fr(time(ctx.now())),
        promo = ctx.pick(
            1,
            &[
                "-10 % avec le code HIVER",
                "Livraison offerte dès 99 €",
                "Retrait en magasin en 2 h"
            ]
        ),
    );
    Reply::html(layout(ctx, "Tarifs — OutilPro", "OutilPro", &body))
}

// ---------------------------------------------------------------- 6. ranked chart

static CHART_CHANGES: [Change; 4] = [
    Change {
        at: 17,
        kind: Reorder,
        what: "#3 and #4 swap places",
    },
    Change {
        at: 35,
        kind: Reorder,
        what: "#7 and #8 swap places",
    },
    Change {
        at: 53,
        kind: OneChar,
        what: "a title's episode number 212 -> 213",
    },
    Change {
        at: 69,
        kind: Revert,
        what: "#3 and #4 back in their first order",
    },
];

fn chart(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let episode = if v >= 3 { 213 } else { 212 };
    let title5 = format!("Deep Field, ep. {episode}");
    let mut ranked = vec![
        "The Long Game",
        "Kitchen Chemistry",
        "Night Shift Stories",
        "Market Watch Daily",
        title5.as_str(),
        "Tiny Histories",
        "The Climbing Log",
        "Word Nerds",
        "Field Notes",
        "Signal & Noise",
    ];
    if v == 1 || v == 2 || v == 3 {
        ranked.swap(2, 3);
    }
    if v >= 2 {
        ranked.swap(6, 7);
    }
    let chart: String = ranked.iter().map(|t| format!("<li>{t}</li>")).collect();
    let also = [
        "Garden Talk",
        "Code Review",
        "Bird Song",
        "The Rewind",
        "Slow Travel",
        "Quiz Night",
    ];
    let also_html: String = ctx
        .shuffled(1, &also)
        .iter()
        .map(|t| format!("<li>{t}</li>"))
        .collect();
    let trending: String = ctx
        .shuffled(2, &ranked[..6])
        .iter()
        .take(4)
        .map(|t| format!("<li>{t}</li>"))
        .collect();
    let body = format!(
        "<h1>Top 10 podcasts this week</h1><p class=\"updated\">Chart updated {ago}</p>\
         <ol id=\"chart\">{chart}</ol>\
         <section><h2>You may also like</h2><ul class=\"also\">{also_html}</ul></section>\
         <section><h2>Trending now</h2><ul class=\"trending\">{trending}</ul></section>",
        ago = ago_en(ctx.now() % 900 + 60),
    );
    Reply::html(layout(ctx, "Top podcasts — Castlist", "Castlist", &body))
}

// ---------------------------------------------------------------- 7. A/B pricing page

static AB_CHANGES: [Change; 3] = [
    Change {
        at: 19,
        kind: OneChar,
        what: "Team plan $29 -> $39",
    },
    Change {
        at: 37,
        kind: Removed,
        what: "a feature sentence removed",
    },
    Change {
        at: 54,
        kind: Revert,
        what: "Team plan back to $29",
    },
];

fn ab(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let team = if v == 1 || v == 2 { "$39" } else { "$29" };
    let plans: [(&str, &str, &[&str]); 3] = [
        ("Starter", "$0", &["3 projects", "Community support"]),
        (
            "Team",
            team,
            if v >= 2 {
                &["Unlimited projects", "Priority support"]
            } else {
                &[
                    "Unlimited projects",
                    "Priority support",
                    "Single sign-on included.",
                ]
            },
        ),
        ("Enterprise", "$99", &["Audit logs", "Dedicated manager"]),
    ];
    // Two templates over the same facts, split 50/50 per request as an A/B test does.
    let body = if ctx.chance(1, 50) {
        let rows: String = plans
            .iter()
            .map(|(name, price, features)| {
                format!(
                    "<tr><th itemprop=\"name\">{name}</th><td><span itemprop=\"price\">{price}</span> per user / month</td><td>{}</td></tr>",
                    features.iter().map(|f| format!("<span class=\"feature\">{f}</span>")).collect::<Vec<_>>().join("<br>")
                )
            })
            .collect();
        format!(
            "<h1>Pricing</h1><p>Simple plans for every team.</p><table class=\"plans\">{rows}</table><p>Compare all features ›</p>"
        )
    } else {
        let cards: String = plans
            .iter()
            .map(|(name, price, features)| {
                format!(
                    "<div class=\"card\"><h2 itemprop=\"name\">{name}</h2><p class=\"big\"><span itemprop=\"price\">{price}</span><small>/mo per seat</small></p><ul>{}</ul><a class=\"cta\">Start free trial</a></div>",
                    features.iter().map(|f| format!("<li class=\"feature\">{f}</li>")).collect::<String>()
                )
            })
            .collect();
        format!(
            "<h1>Plans that grow with you</h1><div class=\"cards\">{cards}</div><p>Trusted by 4,000+ teams</p>"
        )
    };
    Reply::html(layout(ctx, "Pricing — Flowbase", "Flowbase", &body))
}

// ---------------------------------------------------------------- 8. changelog behind a stale replica

static CHANGELOG_CHANGES: [Change; 4] = [
    Change {
        at: 13,
        kind: OneChar,
        what: "latest release v4.2.0 -> v4.2.1",
    },
    Change {
        at: 29,
        kind: Removed,
        what: "a release note sentence removed",
    },
    Change {
        at: 46,
        kind: InNoisyLine,
        what: "download size 41 MB -> 42 MB beside the mirror's ping",
    },
    Change {
        at: 61,
        kind: Revert,
        what: "latest release back to v4.2.0 (a pulled release)",
    },
];

fn changelog(ctx: &Ctx) -> Reply {
    // One request in five reaches a replica that lags 7 requests behind.
    let stale = ctx.quiet(3) && ctx.chance(1, 20);
    let v = if stale {
        ctx.version_back(7)
    } else {
        ctx.version
    };
    let release = if (1..4).contains(&v) {
        "v4.2.1"
    } else {
        "v4.2.0"
    };
    let notes = if v >= 2 {
        "Faster compaction of large tables. Fixes a crash when the WAL is truncated."
    } else {
        "Faster compaction of large tables. Fixes a crash when the WAL is truncated. Replication now resumes after a network partition."
    };
    let size = if v >= 3 { 42 } else { 41 };
    let body = format!(
        "<h1>Ferrite DB changelog</h1><section id=\"latest\"><h2>Latest release: {release}</h2><p>{notes}</p>\
         <p class=\"download\">Download: {size} MB · nearest mirror responded in {ping} ms</p></section>\
         <section id=\"older\"><h2>v4.1.3</h2><p>Security fixes.</p></section>\
         <p class=\"served\">Served by {replica} at {iso}</p>",
        ping = 8 + ctx.below(2, 90),
        replica = if stale {
            "replica db-3"
        } else {
            ctx.pick(3, &["replica db-1", "replica db-2"])
        },
        iso = iso(time(ctx.now())),
    );
    Reply::html(layout(ctx, "Changelog — Ferrite DB", "Ferrite DB", &body))
}

// ---------------------------------------------------------------- 9. tickets behind a bot manager

static TICKETS_CHANGES: [Change; 3] = [
    Change {
        at: 22,
        kind: OneChar,
        what: "Fri 9 Jan: 4 tickets left -> 3 tickets left",
    },
    Change {
        at: 40,
        kind: Removed,
        what: "the sold-out Saturday show removed",
    },
    Change {
        at: 58,
        kind: Revert,
        what: "Fri 9 Jan back to 4 tickets left",
    },
];

/// A Cloudflare-style interstitial served with 200, as its public docs describe the shape.
fn challenge_page(ctx: &Ctx) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en-US\"><head><title>Just a moment...</title>\
         <meta http-equiv=\"refresh\" content=\"390\"></head><body><div class=\"main-wrapper\">\
         <h1>harbor-arena.example</h1><h2>Checking if the site connection is secure</h2>\
         <p>harbor-arena.example needs to review the security of your connection before proceeding.</p>\
         <noscript>Enable JavaScript and cookies to continue</noscript>\
         <div class=\"footer\">Ray ID: <code>{ray}</code> Performance &amp; security by Cloudflare</div></div>\
         <script>window._cf_chl_opt={{cRay:'{ray}',cH:'{h}'}};</script></body></html>",
        ray = ctx.token(0xca1, 16),
        h = ctx.token(0xca2, 40),
    )
}

fn tickets(ctx: &Ctx) -> Reply {
    if ctx.quiet(3) {
        match ctx.below(0xb07, 100) {
            0..=9 => return Reply::html(challenge_page(ctx)),
            10..=14 => {
                return Reply::status(
                    403,
                    format!(
                        "<HTML><HEAD><TITLE>Access Denied</TITLE></HEAD><BODY><H1>Access Denied</H1>\
                         You don't have permission to access this server.<P>Reference #18.{}</BODY></HTML>",
                        ctx.token(0xacc, 24)
                    ),
                );
            }
            15..=17 => {
                return Reply {
                    retry_after: Some(30),
                    ..Reply::status(429, "<html><body><h1>Too Many Requests</h1><p>Please slow down.</p></body></html>".into())
                };
            }
            18..=20 => {
                return Reply::html("<html><body><h1>Too many requests</h1><p>You have been rate limited. Try again in a minute.</p></body></html>".into());
            }
            _ => {}
        }
    }
    let v = ctx.version;
    let left = if v == 1 || v == 2 { 3 } else { 4 };
    let mut shows = vec![
        ("Thu 8 Jan, 20:00", "Orchestra of the Sea".to_string()),
        (
            "Fri 9 Jan, 20:00",
            format!("Orchestra of the Sea — {left} tickets left"),
        ),
        (
            "Sat 10 Jan, 19:30",
            "Orchestra of the Sea — sold out".to_string(),
        ),
        ("Sun 11 Jan, 15:00", "Family matinee".to_string()),
    ];
    if v >= 2 {
        shows.retain(|s| !s.0.starts_with("Sat"));
    }
    let rows: String = shows
        .iter()
        .map(|(d, s)| format!("<tr><td>{d}</td><td>{s}</td></tr>"))
        .collect();
    let body = format!(
        "<h1>Harbor Arena — tickets</h1><table id=\"events\">{rows}</table>\
         <p class=\"queue\">{queue} people in the queue · your position will be kept for 10 minutes</p>",
        queue = 100 + ctx.below(1, 900),
    );
    Reply::html(layout(ctx, "Tickets — Harbor Arena", "Harbor Arena", &body))
}

// ---------------------------------------------------------------- 10. opening hours, maintenance

static HOURS_CHANGES: [Change; 3] = [
    Change {
        at: 24,
        kind: OneChar,
        what: "Thursday closes 18:00 -> 19:00",
    },
    Change {
        at: 42,
        kind: Removed,
        what: "'Closed on public holidays.' removed",
    },
    Change {
        at: 60,
        kind: Revert,
        what: "Thursday back to 18:00",
    },
];

fn hours(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let thursday = if v == 1 || v == 2 { "19:00" } else { "18:00" };
    let holidays = if v >= 2 {
        ""
    } else {
        " Closed on public holidays."
    };
    let body = format!(
        "<h1>City Library — opening hours</h1><table id=\"hours\">\
         <tr><td>Monday</td><td>09:00–18:00</td></tr><tr><td>Tuesday</td><td>09:00–18:00</td></tr>\
         <tr><td>Wednesday</td><td>09:00–20:00</td></tr><tr><td>Thursday</td><td>09:00–{thursday}</td></tr>\
         <tr><td>Friday</td><td>09:00–17:00</td></tr><tr><td>Saturday</td><td>10:00–14:00</td></tr></table>\
         <p class=\"note\">Book returns are possible around the clock.{holidays}</p>\
         <p class=\"visitors\">{visitors} visitors today</p>",
        visitors = thousands(300 + u64::from(ctx.n) * 4, ","),
    );
    let page = layout(ctx, "Opening hours — City Library", "City Library", &body);
    if ctx.quiet(3) {
        match ctx.below(0x3a1, 100) {
            0..=6 => {
                return Reply::html("<html><head><title>Maintenance</title></head><body><h1>We'll be back soon!</h1><p>Our website is undergoing scheduled maintenance. Thank you for your patience.</p></body></html>".into());
            }
            7..=9 => {
                return Reply {
                    retry_after: Some(120),
                    ..Reply::status(503, "<html><body><h1>503 Service Unavailable</h1><p>The server is temporarily down for maintenance.</p></body></html>".into())
                };
            }
            10..=13 => return Reply::html(String::new()),
            14..=18 => {
                // Cut mid-document, as a proxy that lost the upstream mid-body sends it.
                let mut cut = page.len() * 2 / 5;
                while !page.is_char_boundary(cut) {
                    cut -= 1;
                }
                return Reply::html(page[..cut].to_string());
            }
            _ => {}
        }
    }
    Reply::html(page)
}

// ---------------------------------------------------------------- 11. rendered events page (XHR, lazy loading)

static EVENTS_CHANGES: [Change; 3] = [
    Change {
        at: 21,
        kind: OneChar,
        what: "an event's price €18 -> €19 (in the XHR data)",
    },
    Change {
        at: 44,
        kind: Removed,
        what: "an event removed (in the XHR data)",
    },
    Change {
        at: 62,
        kind: Revert,
        what: "price back to €18",
    },
];

fn events(ctx: &Ctx) -> Reply {
    let body = "<h1>Riverside Jazz Club — upcoming</h1><ul id=\"events\"><li class=\"placeholder\">Loading events…</li></ul>\
         <section id=\"reviews\"><p class=\"placeholder\">Loading reviews…</p></section>\
         <script>\
         const base=location.pathname.replace(/\\/$/,'')+'/';\
         fetch(base+'data.json').then(r=>r.json()).then(d=>{const ul=document.getElementById('events');ul.innerHTML='';\
         for(const e of d.events){const li=document.createElement('li');li.textContent=e.date+' — '+e.name+' — '+e.price;ul.appendChild(li);}});\
         new IntersectionObserver((es,o)=>{if(es.some(e=>e.isIntersecting)){o.disconnect();\
         fetch(base+'more.html').then(r=>r.text()).then(t=>{document.getElementById('reviews').innerHTML=t;});}})\
         .observe(document.getElementById('reviews'));\
         </script>";
    Reply::html(layout(
        ctx,
        "Events — Riverside Jazz Club",
        "Riverside Jazz Club",
        body,
    ))
}

fn events_resource(ctx: &Ctx, file: &str) -> Option<Reply> {
    let v = ctx.version;
    match file {
        "data.json" => {
            let price = if v == 1 || v == 2 { "€19" } else { "€18" };
            let mut list = vec![
                ("Fri 9 Jan", "Quartet Nocturne", price.to_string()),
                ("Sat 10 Jan", "Big Band Night", "€25".to_string()),
                ("Sun 11 Jan", "Sunday Jam Session", "free".to_string()),
            ];
            if v >= 2 {
                list.retain(|e| e.1 != "Sunday Jam Session");
            }
            let events: Vec<serde_json::Value> = list
                .iter()
                .map(|(d, n, p)| serde_json::json!({"date": d, "name": n, "price": p}))
                .collect();
            let body = serde_json::json!({"requestId": ctx.token(0x4e9, 12), "events": events});
            Some(Reply {
                content_type: "application/json",
                ..Reply::html(body.to_string())
            })
        }
        "more.html" => Some(Reply::html(format!(
            "<h2>Reviews</h2><p>“Best night out in town.” — {} reviews, 4.8 stars</p>",
            thousands(1_200 + u64::from(ctx.n), ",")
        ))),
        _ => None,
    }
}

// ---------------------------------------------------------------- 12. careers page full of tokens

static CAREERS_CHANGES: [Change; 4] = [
    Change {
        at: 16,
        kind: Added,
        what: "a job posted",
    },
    Change {
        at: 34,
        kind: Removed,
        what: "a job removed",
    },
    Change {
        at: 51,
        kind: OneChar,
        what: "3 openings -> 4 openings",
    },
    Change {
        at: 67,
        kind: Revert,
        what: "back to 3 openings",
    },
];

fn careers(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let openings = if v == 3 { 4 } else { 3 };
    let mut jobs = vec![
        format!("Backend engineer (Rust) — Berlin or remote — {openings} openings"),
        "Product designer — Lisbon".to_string(),
        "Support lead — remote (EU)".to_string(),
    ];
    if v >= 1 {
        jobs.push("Data engineer — Berlin".to_string());
    }
    if v >= 2 {
        jobs.retain(|j| !j.starts_with("Product designer"));
    }
    let cls = ctx.token(0xc1, 5);
    let list: String = jobs
        .iter()
        .map(|j| {
            format!(
                "<li class=\"sc-{cls} job\"><a href=\"/jobs/{}?ref={}\">{j}</a></li>",
                j.len(),
                ctx.token(0x7e, 10)
            )
        })
        .collect();
    let body = format!(
        "<h1>Careers at Lumen Labs</h1><ul id=\"jobs\">{list}</ul>\
         <p class=\"posted\">List updated {posted}</p><p class=\"support\">Support code: {session} · Request ID: {request} · build {build} rendered in {ms} ms</p>",
        posted = date_en_gb(time(ctx.now())),
        session = ctx.token(1, 12),
        request = ctx.token(2, 32),
        build = ctx.token(3, 7),
        ms = 20 + ctx.below(4, 200),
    );
    Reply::html(layout(ctx, "Careers — Lumen Labs", "Lumen Labs", &body))
}

// ---------------------------------------------------------------- 13. recipe in Unicode variants

static RECIPE_CHANGES: [Change; 4] = [
    Change {
        at: 18,
        kind: OneChar,
        what: "2 eggs -> 3 eggs",
    },
    Change {
        at: 36,
        kind: Removed,
        what: "a tip sentence removed",
    },
    Change {
        at: 53,
        kind: InNoisyLine,
        what: "resting time 10–12 -> 20–22 minutes in a line whose dash and spaces vary",
    },
    Change {
        at: 70,
        kind: Revert,
        what: "back to 2 eggs",
    },
];

fn recipe(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    // Each request spells the same text differently: NFC or NFD accents, no-break or plain
    // spaces, entity spellings, curly or straight quotes, en dashes or hyphens, extra blanks.
    let e_circ = ctx.pick(1, &["ê", "e\u{302}"]);
    let e_acute = ctx.pick(2, &["é", "e\u{301}", "&eacute;", "&#233;"]);
    let sp = ctx.pick(3, &[" ", "\u{a0}", "&nbsp;", "  ", "\n  "]);
    let amp = ctx.pick(4, &["&amp;", "&#38;", "&#x26;"]);
    let apos = ctx.pick(5, &["'", "’", "&rsquo;"]);
    let dash = ctx.pick(6, &["–", "-", "&ndash;"]);
    let eggs = if (1..4).contains(&v) { 3 } else { 2 };
    let rest = if v >= 3 {
        format!("20{dash}22")
    } else {
        format!("10{dash}12")
    };
    let tip = if v >= 2 {
        format!("Don{apos}t skip the resting time.")
    } else {
        format!("Don{apos}t skip the resting time. A splash of beer makes them lighter.")
    };
    let body = format!(
        "<div class=\"recipe\"><h1>Cr{e_circ}pes with salted caramel {amp} apples</h1>\
         <ul class=\"ingredients\"><li>250{sp}g flour</li><li>{eggs} eggs</li><li>500{sp}ml milk</li><li>a pinch of salt</li></ul>\
         <p>Rest the batter for {rest}{sp}minutes.</p><p>{tip}</p>\
         <p>Serve with cr{e_circ}me fra{i}che or caf{e_acute} au lait.</p></div>\
         <p class=\"rating\">{stars} ratings</p>",
        i = ctx.pick(7, &["î", "i\u{302}"]),
        stars = thousands(5_000 + u64::from(ctx.n) * 2, ","),
    );
    Reply::html(layout(ctx, "Crêpes — Petit Four", "Petit Four", &body))
}

// ---------------------------------------------------------------- 14. blog post under banners

static BLOG_CHANGES: [Change; 3] = [
    Change {
        at: 23,
        kind: OneChar,
        what: "sow 3 weeks -> sow 4 weeks before the last frost",
    },
    Change {
        at: 41,
        kind: Removed,
        what: "a sentence removed from the article",
    },
    Change {
        at: 59,
        kind: Revert,
        what: "back to 'sow 3 weeks'",
    },
];

fn blog(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let weeks = if v == 1 || v == 2 { 4 } else { 3 };
    let extra = if v >= 2 {
        ""
    } else {
        " Cover them with fleece on frosty nights."
    };
    let modal = if ctx.chance(1, 60) {
        format!(
            "<div class=\"modal\" role=\"dialog\"><h2>Don't miss a post</h2><p>Join {} gardeners who get our weekly letter.</p><input type=\"email\"><button>Subscribe</button></div>",
            thousands(12_400 + u64::from(ctx.n) * 3, ",")
        )
    } else {
        String::new()
    };
    let body = format!(
        "{banner}{modal}<article><h1>Growing sweet peas from seed</h1>\
         <p>Sow sweet peas indoors {weeks} weeks before the last frost.{extra}</p>\
         <p>Pinch out the tips when the plants have three pairs of leaves.</p></article>\
         <p class=\"paywall\">You have {left} free articles left this month.</p>\
         <p class=\"share\">Shared {shares} times</p>",
        banner = cookie_banner(ctx),
        left = 9 - (ctx.n / 10).min(9),
        shares = thousands(1_000 + ctx.below(2, 400), ","),
    );
    Reply::html(layout(
        ctx,
        "Sweet peas — The Quiet Garden",
        "The Quiet Garden",
        &body,
    ))
}

// ---------------------------------------------------------------- 15. out of stock among decoys

static RESTOCK_CHANGES: [Change; 3] = [
    Change {
        at: 25,
        kind: InNoisyLine,
        what: "back in stock, in the line with the watchers counter",
    },
    Change {
        at: 43,
        kind: Revert,
        what: "unavailable again",
    },
    Change {
        at: 61,
        kind: OneChar,
        what: "price $149 -> $148",
    },
];

fn restock(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let state = if v == 1 {
        "In stock — ships in 1–2 days"
    } else {
        "Currently unavailable"
    };
    let price = if v >= 3 { "$148" } else { "$149" };
    let watching = 20 + ctx.below(1, 60);
    let decoys = [
        "Trailrunner Lite — In stock",
        "Summit GTX — Back in stock soon!",
        "Ridge Mid — In stock",
        "Canyon Low — Only 1 left in stock",
        "Trail Socks — Add to cart",
    ];
    let decoy_html: String = ctx
        .shuffled(2, &decoys)
        .iter()
        .take(3)
        .map(|d| format!("<li>{d}</li>"))
        .collect();
    let body = format!(
        "<h1>Trailrunner GTX, men's</h1><div id=\"availability\"><p class=\"price\">{price}</p>\
         <p>{state} · {watching} people are watching this item</p></div>\
         <p class=\"notify\">Notify me when this item is back in stock</p>\
         <section><h2>Customers also viewed</h2><ul>{decoy_html}</ul></section>\
         <p class=\"store\">{stores} stores near you have similar items in stock</p>",
        stores = 1 + ctx.below(3, 5),
    );
    Reply::html(layout(
        ctx,
        "Trailrunner GTX — Peak Outfitters",
        "Peak Outfitters",
        &body,
    ))
}

// ---------------------------------------------------------------- 16. JSON API

static API_CHANGES: [Change; 4] = [
    Change {
        at: 14,
        kind: OneChar,
        what: "price 49.90 -> 49.99",
    },
    Change {
        at: 31,
        kind: Removed,
        what: "an offer removed",
    },
    Change {
        at: 48,
        kind: Reorder,
        what: "the ranked offers reordered",
    },
    Change {
        at: 65,
        kind: Revert,
        what: "price back to 49.90",
    },
];

fn api(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let price = if (1..4).contains(&v) {
        "49.99"
    } else {
        "49.90"
    };
    let mut offers = vec![
        ("seller-a", "49.90"),
        ("seller-b", "51.00"),
        ("seller-c", "53.50"),
    ];
    if v >= 2 {
        offers.retain(|o| o.0 != "seller-c");
    }
    if v >= 3 {
        offers.reverse();
    }
    let offers_json: Vec<String> = offers
        .iter()
        .map(|(s, p)| {
            let fields = [format!("\"seller\":\"{s}\""), format!("\"price\":{p}")];
            ctx.shuffled(0x0ff ^ s.len() as u64, &fields).join(",")
        })
        .map(|f| format!("{{{f}}}"))
        .collect();
    // Key order varies per request, as with servers that serialize hash maps.
    let fields = vec![
        "\"id\":4711".to_string(),
        "\"name\":\"Trail headlamp 400 lm\"".to_string(),
        format!("\"price\":{price}"),
        "\"currency\":\"EUR\"".to_string(),
        format!("\"offers\":[{}]", offers_json.join(",")),
        format!("\"requestId\":\"{}\"", ctx.token(1, 32)),
        format!("\"serverTime\":\"{}\"", iso(time(ctx.now()))),
        format!("\"rateLimitRemaining\":{}", 1000 - ctx.n.min(999)),
    ];
    let body = format!("{{{}}}", ctx.shuffled(2, &fields).join(","));
    Reply {
        content_type: "application/json",
        ..Reply::html(body)
    }
}

// ---------------------------------------------------------------- 17. quiet control page

static CONTROL_CHANGES: [Change; 2] = [
    Change {
        at: 30,
        kind: OneChar,
        what: "founded 1987 -> 1986",
    },
    Change {
        at: 60,
        kind: Removed,
        what: "a sentence removed",
    },
];

fn control(ctx: &Ctx) -> Reply {
    let v = ctx.version;
    let year = if v >= 1 { 1986 } else { 1987 };
    let extra = if v >= 2 {
        ""
    } else {
        " Members elect the board every two years."
    };
    let body = format!(
        "<h1>About Northwind Cooperative</h1><div id=\"about\"><p>Northwind was founded in {year} by twelve farmers.</p>\
         <p>Today it supplies 140 shops in the region.{extra}</p></div>"
    );
    // No per-request tokens either: this page is byte-for-byte stable between changes.
    Reply::html(format!(
        "<!doctype html><html><head><title>About — Northwind</title></head><body>{body}<footer>© Northwind</footer></body></html>"
    ))
}

/// The corpus, in table order.
pub static PAGES: [Page; 17] = [
    Page {
        name: "shop-product",
        site: "shop product",
        noise: "viewer and sales counters, delivery date, rotating ad and recommendations, cookie banner, cart token, hashed classes",
        x_path: Some("//div[@id='buy-box'] | //div[@id='description']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &SHOP_CHANGES,
        render: shop,
        resource: None,
    },
    Page {
        name: "news-front",
        site: "news front page",
        noise: "relative times, en-US date over the new year, live feed with new items, shuffled most-read, rotating ad, temperature",
        x_path: Some("//article[@class='lead']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &NEWS_CHANGES,
        render: news,
        resource: None,
    },
    Page {
        name: "forum-thread",
        site: "forum thread (de)",
        noise: "German absolute and relative times, view and online counters, session ids in links, shuffled similar topics",
        x_path: Some("//div[@class='post-body']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &FORUM_CHANGES,
        render: forum,
        resource: None,
    },
    Page {
        name: "status-page",
        site: "status page",
        noise: "seconds since refresh, jittering uptime in each component line, ja-JP and ISO times, edge name",
        x_path: Some("//ul[@id='components']/li | //section[@id='incidents']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &STATUS_CHANGES,
        render: status,
        resource: None,
    },
    Page {
        name: "price-list",
        site: "price list (fr)",
        noise: "number formats (space, NBSP, narrow NBSP) and currency formats (€ before/after, EUR), French date, rotating promo",
        x_path: Some("//table[@id='tarifs']//tr"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &PRICES_CHANGES,
        render: prices,
        resource: None,
    },
    Page {
        name: "ranked-chart",
        site: "ranked chart",
        noise: "shuffled lists beside the ranked one, relative time",
        x_path: Some("//ol[@id='chart']/li"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &CHART_CHANGES,
        render: chart,
        resource: None,
    },
    Page {
        name: "ab-pricing",
        site: "pricing page, A/B test",
        noise: "two templates over the same facts",
        x_path: Some("//*[@itemprop='name' or @itemprop='price' or contains(@class,'feature')]"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &AB_CHANGES,
        render: ab,
        resource: None,
    },
    Page {
        name: "stale-changelog",
        site: "changelog behind a stale replica",
        noise: "1 in 5 answers from a replica 7 requests behind, mirror ping in a line, replica name, ISO time",
        x_path: Some("//section[@id='latest']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &CHANGELOG_CHANGES,
        render: changelog,
        resource: None,
    },
    Page {
        name: "bot-tickets",
        site: "ticket sales behind a bot manager",
        noise: "200 challenge page, 403 access denied, 429 and 200 rate-limit pages, queue counter",
        x_path: Some("//table[@id='events']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &TICKETS_CHANGES,
        render: tickets,
        resource: None,
    },
    Page {
        name: "library-hours",
        site: "opening hours with maintenance",
        noise: "200 maintenance page, 503, empty 200 body, truncated 200 body, visitor counter",
        x_path: Some("//table[@id='hours'] | //p[@class='note']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &HOURS_CHANGES,
        render: hours,
        resource: None,
    },
    Page {
        name: "xhr-events",
        site: "events page filled by XHR and lazy loading (rendered)",
        noise: "content arriving 0.1-0.8 s after load by XHR and on scroll, review counter",
        x_path: Some("//ul[@id='events']"),
        regex: None,
        dynamic: true,
        watch_links: false,
        changes: &EVENTS_CHANGES,
        render: events,
        resource: Some(events_resource),
    },
    Page {
        name: "careers-tokens",
        site: "careers page",
        noise: "visible request id, support code, build hash, render time, en-GB date; hashed classes, ref tokens",
        x_path: Some("//ul[@id='jobs']/li"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &CAREERS_CHANGES,
        render: careers,
        resource: None,
    },
    Page {
        name: "recipe-unicode",
        site: "recipe",
        noise: "NFC/NFD, NBSP, entity spellings, quote and dash variants, blanks, rating counter",
        x_path: Some("//div[@class='recipe']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &RECIPE_CHANGES,
        render: recipe,
        resource: None,
    },
    Page {
        name: "blog-banners",
        site: "blog post",
        noise: "rotating cookie banner, newsletter modal with counter, free-article counter, share counter",
        x_path: Some("//article"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &BLOG_CHANGES,
        render: blog,
        resource: None,
    },
    Page {
        name: "restock-decoy",
        site: "out-of-stock product",
        noise: "restock decoy phrases in rotating recommendations, watcher counter in the availability line",
        x_path: Some("//div[@id='availability']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &RESTOCK_CHANGES,
        render: restock,
        resource: None,
    },
    Page {
        name: "json-api",
        site: "JSON API",
        noise: "key order, request id, server time, rate-limit counter",
        x_path: None,
        regex: Some(r#""(?:name|price|currency|seller)":"?[^",}]*"#),
        dynamic: false,
        watch_links: false,
        changes: &API_CHANGES,
        render: api,
        resource: None,
    },
    Page {
        name: "quiet-control",
        site: "quiet control page",
        noise: "none",
        x_path: Some("//div[@id='about']"),
        regex: None,
        dynamic: false,
        watch_links: false,
        changes: &CONTROL_CHANGES,
        render: control,
        resource: None,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn text(page: &Page, seed: u64, n: u32) -> String {
        (page.render)(&Ctx::new(seed, page, n)).body
    }

    #[test]
    fn the_same_seed_and_count_give_the_same_page() {
        for page in &PAGES {
            for n in [1, 2, 17, 40, 80] {
                assert_eq!(text(page, 7, n), text(page, 7, n), "{}", page.name);
            }
        }
    }

    #[test]
    fn noisy_pages_differ_between_requests_and_seeds() {
        for page in PAGES
            .iter()
            .filter(|p| p.name != "quiet-control" && !p.dynamic)
        {
            let differing = (2..10)
                .filter(|&n| text(page, 7, n) != text(page, 7, n - 1))
                .count();
            assert!(
                differing >= 4,
                "{} changed on {differing} of 8 requests",
                page.name
            );
            assert_ne!(text(page, 7, 3), text(page, 8, 3), "{}", page.name);
        }
    }

    #[test]
    fn the_control_page_changes_only_at_its_declared_counts() {
        let page = PAGES
            .iter()
            .find(|p| p.name == "quiet-control")
            .expect("control page");
        for n in 2..=80 {
            let changed = text(page, 7, n) != text(page, 7, n - 1);
            assert_eq!(
                changed,
                page.changes.iter().any(|c| c.at == n),
                "request {n}"
            );
        }
    }

    /// Every real change shows in the page at its count: the facts of the version before and
    /// after differ (the noise drawn for one request held fixed).
    #[test]
    fn every_real_change_shows_at_its_declared_count() {
        for page in &PAGES {
            assert!(
                page.changes.windows(2).all(|w| w[0].at + 4 < w[1].at),
                "{}",
                page.name
            );
            for change in page.changes {
                let mut before = Ctx::new(7, page, change.at);
                let after = (page.render)(&before);
                assert_eq!(before.version, page.version_at(change.at));
                before.version -= 1;
                let old = (page.render)(&before);
                let (old, new) = match page.resource {
                    Some(resource) => {
                        let after_ctx = Ctx::new(7, page, change.at);
                        let body =
                            |c: &Ctx| resource(c, "data.json").map(|r| r.body).unwrap_or_default();
                        (body(&before), body(&after_ctx))
                    }
                    None => (old.body, after.body),
                };
                assert_ne!(old, new, "{} at {}", page.name, change.at);
            }
        }
    }

    #[test]
    fn the_virtual_clock_crosses_a_new_year_within_80_requests() {
        let page = &PAGES[1];
        let first = time(Ctx::new(7, page, 1).now()).year();
        let last = time(Ctx::new(7, page, 80).now()).year();
        assert_eq!((first, last), (2026, 2027));
        assert!(text(page, 7, 1).contains("December 31, 2026"));
        assert!(text(page, 7, 80).contains("January 1, 2027"));
    }

    #[test]
    fn error_pages_never_hide_a_real_change() {
        for page in PAGES
            .iter()
            .filter(|p| p.name == "bot-tickets" || p.name == "library-hours")
        {
            for change in page.changes {
                for n in change.at..=change.at + 3 {
                    let reply = text(page, 7, n);
                    assert!(reply.contains("<table"), "{} request {n}", page.name);
                }
            }
            let errors = (1..=80)
                .map(|n| (page.render)(&Ctx::new(7, page, n)))
                .filter(|r| r.status != 200 || !r.body.contains("<table"))
                .count();
            assert!(errors >= 5, "{}: {errors} error pages in 80", page.name);
        }
    }
}
