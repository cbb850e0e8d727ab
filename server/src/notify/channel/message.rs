//! What chat and push channels say: a title, the notification's text (the change with its
//! marks), the page's address and a link to the notification, in plain text, Markdown or HTML,
//! cut to a service's limit with a link to the whole change.

use super::Links;
use crate::notify::content::escape;
use crate::store::Delivery;

/// The name `delivery`'s monitor goes by: its name, else its page's address.
pub(crate) fn monitor_name(delivery: &Delivery) -> &str {
    let n = &delivery.notification;
    n.task_name
        .as_deref()
        .or(n.url.as_deref())
        .unwrap_or("monitor")
}

/// The monitor's name and what fired, on one line (a subject or a title): a name or an
/// expression with a line break cannot add a header.
pub(crate) fn title(delivery: &Delivery) -> String {
    format!(
        "{}: {}",
        monitor_name(delivery),
        delivery.synthetic_expression
    )
    .replace(['\r', '\n'], " ")
}

/// A delivery as a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The monitor's name and what fired, one line.
    pub title: String,
    /// The notification as plain text: the monitor, the page, what fired and the change.
    pub text: String,
    /// The page's URL, when there is one.
    pub page: Option<String>,
    /// The notification's page (the whole change), none for a test notification.
    pub link: Option<String>,
    /// The body the endpoint's template wrote, in the format it writes: shown as it is, in
    /// place of the text the channel would format.
    pub templated: Option<String>,
}

impl Message {
    /// The message of `delivery`, its links built on `links`.
    pub fn of(delivery: &Delivery, links: &Links) -> Message {
        let n = &delivery.notification;
        let name = monitor_name(delivery);
        let title = title(delivery);
        let text = match &delivery.explanation {
            Some(explanation) if !explanation.text.is_empty() => explanation.text.clone(),
            _ => {
                let mut text = format!("{name}\n");
                if let Some(url) = &n.url {
                    text.push_str(url);
                    text.push('\n');
                }
                text.push_str(&delivery.synthetic_expression);
                text.push('\n');
                if let Some(current) = &n.current {
                    text.push('\n');
                    text.push_str(current);
                    text.push('\n');
                }
                if let Some(error) = &n.error {
                    text.push_str("error: ");
                    text.push_str(error);
                    text.push('\n');
                }
                text
            }
        };
        let rendered = delivery.rendered.as_ref();
        Message {
            title: rendered.and_then(|r| r.title.clone()).unwrap_or(title),
            templated: rendered.and_then(|r| r.body.clone()),
            text: text.trim_end().to_string(),
            page: n.url.clone().filter(|u| !u.is_empty()),
            link: match delivery.digest.is_empty() {
                true => n.id.as_deref().map(|id| links.alert_url(delivery, id)),
                false => Some(links.list_url(delivery)),
            },
        }
    }

    /// The one line the simple hooks post: the monitor, what fired and the page.
    pub fn line(delivery: &Delivery) -> String {
        if let Some(body) = delivery.rendered.as_ref().and_then(|r| r.body.clone()) {
            return body;
        }
        let n = &delivery.notification;
        format!(
            "{}: {} {}",
            n.task_name
                .as_deref()
                .or(n.url.as_deref())
                .unwrap_or("monitor"),
            n.kind,
            n.url.as_deref().unwrap_or("")
        )
    }

    /// The text cut to `limit` characters, with the link to the whole change when cut.
    pub fn text_within(&self, limit: usize) -> String {
        if let Some(body) = &self.templated {
            return cut(body, limit, self.link.as_deref());
        }
        cut(&self.text, limit, self.link.as_deref())
    }

    /// The text and the link as plain text, within `limit` characters.
    pub fn plain(&self, limit: usize) -> String {
        if let Some(body) = &self.templated {
            return cut(body, limit, self.link.as_deref());
        }
        let tail = self
            .link
            .as_deref()
            .map(|l| format!("\n\n{l}"))
            .unwrap_or_default();
        let room = limit.saturating_sub(tail.chars().count());
        format!("{}{tail}", cut(&self.text, room, None))
    }

    /// The title in bold, the text as a code block and the link, in Markdown, within `limit`
    /// characters.
    pub fn markdown(&self, limit: usize) -> String {
        if let Some(body) = &self.templated {
            return cut(body, limit, self.link.as_deref());
        }
        let head = format!("**{}**\n", self.title.replace('*', "\\*"));
        let tail = self
            .link
            .as_deref()
            .map(|l| format!("\n[Whole change]({l})"))
            .unwrap_or_default();
        let fences = "```\n\n```".chars().count();
        let room = limit.saturating_sub(head.chars().count() + tail.chars().count() + fences);
        let text = cut(&self.text, room, None).replace("```", "'''");
        format!("{head}```\n{text}\n```{tail}")
    }

    /// The title in bold, the text preformatted and the link, in HTML (escaped), within `limit`
    /// characters of the HTML.
    pub fn html(&self, limit: usize) -> String {
        if let Some(body) = &self.templated {
            return cut(body, limit, self.link.as_deref());
        }
        let head = format!("<b>{}</b>\n", escape(&self.title));
        let tail = self
            .link
            .as_deref()
            .map(|l| format!("\n<a href=\"{}\">Whole change</a>", escape(l)))
            .unwrap_or_default();
        let room = limit.saturating_sub(head.chars().count() + tail.chars().count() + 11);
        // Cut the text before escaping would split an entity: cut escaped text at a whole one.
        let escaped = escape(&self.text);
        let mut text = cut(&escaped, room, None);
        if let Some(amp) = text.rfind('&')
            && !text[amp..].contains(';')
        {
            text.truncate(amp);
        }
        format!("{head}<pre>{text}</pre>{tail}")
    }
}

/// `text` cut to `limit` characters: the head, an ellipsis, and `link` when given.
pub fn cut(text: &str, limit: usize, link: Option<&str>) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let tail = match link {
        Some(link) => format!("\n… (cut; the whole change: {link})"),
        None => "\n…".to_string(),
    };
    let room = limit.saturating_sub(tail.chars().count());
    let head: String = text.chars().take(room).collect();
    let mut out = head;
    out.push_str(&tail);
    if out.chars().count() > limit {
        // A link longer than the limit: the head alone.
        return text.chars().take(limit).collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_to_the_limit_with_the_link() {
        let text = "é".repeat(5000);
        let cut = cut(&text, 4096, Some("https://w.example/notifications/n1"));
        assert_eq!(cut.chars().count(), 4096);
        assert!(cut.ends_with("https://w.example/notifications/n1)"));
        assert_eq!(super::cut("short", 10, Some("x")), "short");
        let message = Message {
            title: "Tea <b>: content changed".into(),
            text: "a & b ".repeat(2000),
            page: None,
            link: Some("https://w.example/n".into()),
            templated: None,
        };
        for limit in [100, 1024, 4096] {
            assert!(message.html(limit).chars().count() <= limit);
            assert!(message.markdown(limit).chars().count() <= limit);
            assert!(message.plain(limit).chars().count() <= limit);
        }
        assert!(
            message
                .html(4096)
                .starts_with("<b>Tea &lt;b&gt;: content changed</b>")
        );
    }
}
