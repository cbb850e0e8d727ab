//! Amounts of money in one spelling: `€1 249,90`, `1 249,90 €`, `1 249,90 EUR` and
//! `EUR 1 249,90` are one price written by different templates (or CDN edges) of one shop, so
//! the comparison form writes each as the number followed by its ISO code (`1 249,90 EUR`).
//!
//! The number is kept as written (a line key already made its group spaces one space), so a
//! price edit of one digit still differs; only the currency's place and spelling change. A
//! symbol shared by several currencies (`$`) is read as the most common one (USD): the form
//! only has to be the same for one page's spellings, not to name the currency right.

use regex::{Captures, Regex};
use std::borrow::Cow;
use std::sync::LazyLock;

/// A number as prices are written: groups of three after the first digits (`1 249,90`,
/// `1,249.90`, `1.249,90`, `1'249.90`) or a plain run (`84,40`, `129.99`).
const NUMBER: &str = r"\d{1,3}(?:[ .,'’]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?";

/// Currency symbols and the common ISO codes.
const CURRENCY: &str = r"US\$|[€£¥₹₩₽₺₴₪฿$]|\b(?:EUR|USD|GBP|CHF|JPY|CAD|AUD|NZD|SEK|NOK|DKK|PLN|CZK|HUF|INR|CNY|BRL|MXN|ZAR|TRY|KRW)\b";

static AMOUNT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let pattern = format!(
        r"(?P<pre>{CURRENCY}) ?(?P<n1>{NUMBER})(?:\b|$)|\b(?P<n2>{NUMBER}) ?(?P<post>{CURRENCY})(?P<tail>$|[^\d ]| [^\d]| $)"
    );
    Regex::new(&pattern).ok()
});

/// `line_key` with every amount written as its number and ISO code ([module docs](self)).
/// Linear in the text; borrows it when it holds no amount.
pub(crate) fn canonical(line_key: &str) -> Cow<'_, str> {
    let Some(amount) = AMOUNT.as_ref() else {
        return Cow::Borrowed(line_key);
    };
    amount.replace_all(line_key, |caps: &Captures<'_>| {
        let whole = caps.get(0).map_or("", |m| m.as_str());
        match (
            caps.name("pre"),
            caps.name("n1"),
            caps.name("n2"),
            caps.name("post"),
        ) {
            (Some(cur), Some(n), _, _) => format!("{} {}", n.as_str(), code(cur.as_str())),
            // A sign between two numbers (`60 $24.99`) belongs to the one after it, as signs
            // written before do: the tail keeps the suffix form from taking it.
            (_, _, Some(n), Some(cur)) => {
                let tail = caps.name("tail").map_or("", |m| m.as_str());
                format!("{} {}{tail}", n.as_str(), code(cur.as_str()))
            }
            _ => whole.to_string(),
        }
    })
}

fn code(currency: &str) -> &str {
    match currency {
        "€" => "EUR",
        "$" | "US$" => "USD",
        "£" => "GBP",
        "¥" => "JPY",
        "₹" => "INR",
        "₩" => "KRW",
        "₽" => "RUB",
        "₺" => "TRY",
        "₴" => "UAH",
        "₪" => "ILS",
        "฿" => "THB",
        code => code,
    }
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn one_price_in_its_spellings_is_one_form() {
        for spelling in [
            "€1 249,90",
            "1 249,90 €",
            "1 249,90 EUR",
            "EUR 1 249,90",
            "1 249,90€",
        ] {
            assert_eq!(canonical(spelling), "1 249,90 EUR", "{spelling}");
        }
        assert_eq!(canonical("Total: $128.99 today"), "Total: 128.99 USD today");
        assert_eq!(
            canonical("Scie 84,40 € ou 86,40 EUR"),
            "Scie 84,40 EUR ou 86,40 EUR"
        );
        assert_eq!(
            canonical("Burr Grinder 60 $24.99"),
            "Burr Grinder 60 24.99 USD"
        );
        assert_eq!(canonical("1 249,90 €\nnext"), "1 249,90 EUR\nnext");
    }

    #[test]
    fn an_edit_of_one_digit_still_differs() {
        assert_ne!(canonical("€1 249,90"), canonical("1 249,99 €"));
        assert_ne!(canonical("$128.99"), canonical("$129.99"));
    }

    #[test]
    fn text_without_amounts_is_borrowed_and_words_are_left_alone() {
        assert!(matches!(
            canonical("Only 2 left in stock"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            canonical("EURO 2024 in 12 cities"),
            "EURO 2024 in 12 cities"
        );
        assert_eq!(canonical("ticket 1234567 EUR"), "ticket 1234567 EUR");
    }
}
