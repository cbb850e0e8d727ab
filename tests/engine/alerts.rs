//! `wachet::alerts` against DECISIONS.md's table: every AlertType and CompareType, Portal pages,
//! the baseline, number forms, edge-triggering, and flapping and always-failing pages. Each
//! case runs a sequence of checks through one `AlertState` and compares what every check
//! raised.

use wachet::alerts::{
    AlertState, Check, LastCheck, Raised, Subject, evaluate, first_number, operand,
};
use wachet::model::{Alert, AlertParameters, AlertType, ClientData, CompareType, JobType};

/// A check in a sequence: a value, or a failure written `!error text`.
fn check(spec: &str) -> Check<'_> {
    match spec.strip_prefix('!') {
        Some(error) => Check::Failed(error),
        None => Check::Value(spec),
    }
}

fn alert(kind: AlertType, value: &str) -> Alert {
    Alert {
        kind,
        value: (!value.is_empty()).then(|| value.to_string()),
        parameters: None,
        remind_every_seconds: None,
    }
}

fn compared(kind: AlertType, value: &str, compare: CompareType) -> Alert {
    Alert {
        kind,
        value: (!value.is_empty()).then(|| value.to_string()),
        parameters: Some(AlertParameters {
            compare,
            value: None,
        }),
        remind_every_seconds: None,
    }
}

/// Everything each check of `checks` raised, in order.
fn run(alerts: &[Alert], subject: Subject<'_>, checks: &[&str]) -> Vec<Vec<Raised>> {
    let mut state = AlertState::default();
    checks
        .iter()
        .map(|spec| state.observe(check(spec), alerts, subject))
        .collect()
}

/// The synthetic expressions each check raised: the readable form of a sequence's outcome.
fn said(alerts: &[Alert], subject: Subject<'_>, checks: &[&str]) -> Vec<Vec<String>> {
    run(alerts, subject, checks)
        .into_iter()
        .map(|raised| raised.into_iter().map(|r| r.synthetic_expression).collect())
        .collect()
}

/// `said` for a SinglePage monitor with one alert.
fn single(alert: Alert, checks: &[&str]) -> Vec<Vec<String>> {
    said(&[alert], Subject::SinglePage, checks)
}

fn expect(lists: &[&[&str]]) -> Vec<Vec<String>> {
    lists
        .iter()
        .map(|list| list.iter().map(|s| s.to_string()).collect())
        .collect()
}

/// One row of a table: an alert, the checks, what each check must raise.
struct Case {
    name: &'static str,
    alert: Alert,
    checks: &'static [&'static str],
    raised: &'static [&'static [&'static str]],
}

fn run_table(cases: &[Case]) {
    for case in cases {
        assert_eq!(
            single(case.alert.clone(), case.checks),
            expect(case.raised),
            "case {:?}: {:?}",
            case.name,
            case.checks
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The baseline and Error

#[test]
fn the_first_check_is_the_baseline_for_every_alert_type() {
    // Each alert would fire if the first value were compared with anything.
    let alerts: Vec<Alert> = AlertType::ALL
        .iter()
        .map(|&kind| alert(kind, ""))
        .chain([
            alert(AlertType::Eq, "Tea 12 in stock"),
            alert(AlertType::Contains, "in stock"),
            alert(AlertType::NotContains, "sold out"),
            alert(AlertType::Gt, "5"),
            alert(AlertType::Lt, "50"),
        ])
        .collect();
    assert_eq!(AlertType::ALL.len(), 12);
    for subject in [
        Subject::SinglePage,
        Subject::Portal,
        Subject::PortalPage { url: "https://a/" },
    ] {
        let first = run(&alerts, subject, &["Tea 12 in stock"]);
        assert_eq!(first, vec![Vec::<Raised>::new()], "{subject:?}");
    }
    // A failed first check raises Error, and only Error.
    let first = run(&alerts, Subject::SinglePage, &["!HTTP 503"]);
    let kinds: Vec<AlertType> = first[0].iter().map(|r| r.alert.kind).collect();
    assert_eq!(kinds, [AlertType::Error]);
    assert_eq!(first[0][0].error.as_deref(), Some("HTTP 503"));
    assert_eq!(first[0][0].current, None);
}

#[test]
fn error_raises_once_then_one_recovery() {
    let alerts = [alert(AlertType::Error, "")];
    let raised = run(
        &alerts,
        Subject::SinglePage,
        &[
            "up",
            "!timeout",
            "!HTTP 500",
            "!timeout",
            "up again",
            "up again",
            "!HTTP 404",
        ],
    );
    let shape: Vec<Vec<(String, Option<String>)>> = raised
        .iter()
        .map(|list| {
            list.iter()
                .map(|r| (r.synthetic_expression.clone(), r.error.clone()))
                .collect()
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            vec![],
            vec![("check failed".to_string(), Some("timeout".to_string()))],
            vec![],
            vec![],
            vec![("recovered".to_string(), None)],
            vec![],
            vec![("check failed".to_string(), Some("HTTP 404".to_string()))],
        ]
    );
    let recovery = &raised[4][0];
    assert!(recovery.is_recovery());
    assert!(!raised[1][0].is_recovery());
    assert_eq!(recovery.current.as_deref(), Some("up again"));
    assert_eq!(recovery.comparand.as_deref(), Some("up"));
    assert_eq!(recovery.job_type, JobType::SinglePage);
    assert_eq!(recovery.alert, alerts[0]);
}

#[test]
fn a_page_that_fails_every_check_raises_one_error() {
    let alerts = [
        alert(AlertType::Error, ""),
        alert(AlertType::NotEq, ""),
        alert(AlertType::NotContains, "in stock"),
        alert(AlertType::Eq, ""),
        alert(AlertType::Removed, ""),
    ];
    let checks = ["!connection refused"; 20];
    let raised = said(&alerts, Subject::SinglePage, &checks);
    let total: usize = raised.iter().map(Vec::len).sum();
    assert_eq!(total, 1);
    assert_eq!(raised[0], ["check failed"]);
}

#[test]
fn a_failed_check_raises_nothing_but_error_and_value_conditions_skip_it() {
    let alerts = [
        alert(AlertType::Error, ""),
        alert(AlertType::NotEq, ""),
        alert(AlertType::Contains, "in stock"),
    ];
    assert_eq!(
        said(
            &alerts,
            Subject::SinglePage,
            &[
                "in stock", "!timeout", "in stock", "!timeout", "sold out", "in stock"
            ],
        ),
        expect(&[
            &[],
            &["check failed"],
            // Same value and condition as before the outage: only the recovery.
            &["recovered"],
            &["check failed"],
            &["recovered", "content changed"],
            &["content changed", "contains \"in stock\""],
        ])
    );
    // NotEq after an outage compares with the last successful value.
    let raised = run(
        &alerts[1..2],
        Subject::SinglePage,
        &["12 EUR", "!timeout", "14 EUR"],
    );
    assert_eq!(raised[2][0].comparand.as_deref(), Some("12 EUR"));
    assert_eq!(raised[2][0].current.as_deref(), Some("14 EUR"));
}

#[test]
fn after_failed_first_checks_the_first_value_has_nothing_before_it() {
    // No previous value: an edge-triggered condition true now raises; comparisons wait.
    assert_eq!(
        said(
            &[
                alert(AlertType::Contains, "in stock"),
                alert(AlertType::NotEq, ""),
                alert(AlertType::Added, ""),
                alert(AlertType::Increased, ""),
            ],
            Subject::SinglePage,
            &["!timeout", "!timeout", "3 in stock", "4 in stock"],
        ),
        expect(&[
            &[],
            &[],
            &["contains \"in stock\""],
            &[
                "content changed",
                "text added",
                "number increased from 3 to 4"
            ],
        ])
    );
}

// ---------------------------------------------------------------------------------------------
// Every AlertType, with every CompareType

#[test]
fn not_eq_with_every_compare_type() {
    use CompareType::*;
    run_table(&[
        Case {
            name: "All: any difference",
            alert: compared(AlertType::NotEq, "", All),
            checks: &["Tea 12", "Tea 12", "Tea 14", "tea 14", "tea 14"],
            raised: &[&[], &[], &["content changed"], &["content changed"], &[]],
        },
        Case {
            name: "CaseInsensitive: case alone is no change",
            alert: compared(AlertType::NotEq, "", CaseInsensitive),
            checks: &["Tea 12", "TEA 12", "tea 14"],
            raised: &[&[], &[], &["content changed"]],
        },
        Case {
            name: "Added: only changes that add text",
            alert: compared(AlertType::NotEq, "", Added),
            checks: &["a b c", "a c", "a c d", "a x d"],
            raised: &[&[], &[], &["content changed"], &["content changed"]],
        },
        Case {
            name: "Removed: only changes that remove text",
            alert: compared(AlertType::NotEq, "", Removed),
            checks: &["a c", "a b c", "a c", "a c"],
            raised: &[&[], &[], &["content changed"], &[]],
        },
    ]);
    // The comparand is the previous value.
    let raised = run(
        &[alert(AlertType::NotEq, "")],
        Subject::SinglePage,
        &["old", "new"],
    );
    assert_eq!(raised[1][0].comparand.as_deref(), Some("old"));
    assert_eq!(raised[1][0].current.as_deref(), Some("new"));
    assert_eq!(raised[1][0].error, None);
}

#[test]
fn eq_with_every_compare_type() {
    use CompareType::*;
    run_table(&[
        Case {
            name: "All",
            alert: compared(AlertType::Eq, "sold out", All),
            checks: &["in stock", "sold out", "sold out", "Sold Out", "sold out"],
            raised: &[
                &[],
                &["equals \"sold out\""],
                &[],
                &[],
                &["equals \"sold out\""],
            ],
        },
        Case {
            name: "CaseInsensitive",
            alert: compared(AlertType::Eq, "Sold Out", CaseInsensitive),
            checks: &["in stock", "SOLD OUT", "sold out", "in stock"],
            raised: &[&[], &["equals \"Sold Out\" (any case)"], &[], &[]],
        },
        Case {
            name: "Added: the text the change added",
            alert: compared(AlertType::Eq, "3", Added),
            checks: &["Items: 2", "Items: 3", "Items: 3", "Items: 4"],
            raised: &[&[], &["added text equals \"3\""], &[], &[]],
        },
        Case {
            name: "Removed: the text the change removed",
            alert: compared(AlertType::Eq, "2", Removed),
            checks: &["Items: 2", "Items: 3", "Items: 2"],
            raised: &[&[], &["removed text equals \"2\""], &[]],
        },
    ]);
}

#[test]
fn contains_with_every_compare_type() {
    use CompareType::*;
    run_table(&[
        Case {
            name: "All",
            alert: compared(AlertType::Contains, "in stock", All),
            checks: &[
                "Tea sold out",
                "Tea in stock",
                "Tea in stock, 3 left",
                "Tea IN STOCK",
            ],
            raised: &[&[], &["contains \"in stock\""], &[], &[]],
        },
        Case {
            name: "CaseInsensitive",
            alert: compared(AlertType::Contains, "In Stock", CaseInsensitive),
            checks: &["Tea sold out", "Tea IN STOCK", "Tea in stock"],
            raised: &[&[], &["contains \"In Stock\" (any case)"], &[]],
        },
        Case {
            // Already in the page before: only a change that adds it again raises.
            name: "Added",
            alert: compared(AlertType::Contains, "sale", Added),
            checks: &[
                "Tea: sale",
                "Tea: sale\nCoffee: 4",
                "Tea: sale\nCoffee: sale",
                "Tea: sale\nCoffee: sale",
            ],
            raised: &[&[], &[], &["added text contains \"sale\""], &[]],
        },
        Case {
            name: "Removed",
            alert: compared(AlertType::Contains, "sale", Removed),
            checks: &[
                "Tea: sale\nCoffee: 4",
                "Tea: 5\nCoffee: 4",
                "Tea: 5\nCoffee: 4",
            ],
            raised: &[&[], &["removed text contains \"sale\""], &[]],
        },
    ]);
}

#[test]
fn not_contains_with_every_compare_type() {
    use CompareType::*;
    run_table(&[
        Case {
            name: "All",
            alert: compared(AlertType::NotContains, "in stock", All),
            checks: &[
                "Tea in stock",
                "Tea sold out",
                "Tea gone",
                "Tea in stock",
                "Tea sold out",
            ],
            raised: &[
                &[],
                &["does not contain \"in stock\""],
                &[],
                &[],
                &["does not contain \"in stock\""],
            ],
        },
        Case {
            name: "CaseInsensitive",
            alert: compared(AlertType::NotContains, "in stock", CaseInsensitive),
            checks: &["Tea IN STOCK", "Tea In Stock", "Tea sold out"],
            raised: &[&[], &[], &["does not contain \"in stock\" (any case)"]],
        },
        Case {
            // A check that added nothing has nothing to look at: no raise while unchanged.
            name: "Added",
            alert: compared(AlertType::NotContains, "free", Added),
            checks: &["a", "a", "a free", "a free", "a free b"],
            raised: &[
                &[],
                &[],
                &[],
                &[],
                &["added text does not contain \"free\""],
            ],
        },
        Case {
            name: "Removed",
            alert: compared(AlertType::NotContains, "free", Removed),
            checks: &["a free b", "a free", "a free"],
            raised: &[&[], &["removed text does not contain \"free\""], &[]],
        },
    ]);
}

#[test]
fn gt_and_lt_with_every_compare_type() {
    use CompareType::*;
    run_table(&[
        Case {
            name: "Gt All",
            alert: compared(AlertType::Gt, "100", All),
            checks: &[
                "Price 90",
                "Price 120",
                "Price 130",
                "Price 100",
                "Price 101",
            ],
            raised: &[&[], &["number > 100"], &[], &[], &["number > 100"]],
        },
        Case {
            name: "Gt CaseInsensitive reads numbers the same",
            alert: compared(AlertType::Gt, "100", CaseInsensitive),
            checks: &["Price 90", "PRICE 120"],
            raised: &[&[], &["number > 100"]],
        },
        Case {
            name: "Gt Added: the number the change added",
            alert: compared(AlertType::Gt, "100", Added),
            checks: &["Price 500, shipping 5", "Price 500, shipping 150"],
            raised: &[&[], &["added text number > 100"]],
        },
        Case {
            name: "Gt Removed: the number the change removed",
            alert: compared(AlertType::Gt, "100", Removed),
            checks: &["Price 500, shipping 150", "Price 500, shipping 5"],
            raised: &[&[], &["removed text number > 100"]],
        },
        Case {
            name: "Lt All",
            alert: compared(AlertType::Lt, "10", All),
            checks: &["Stock: 12", "Stock: 9", "Stock: 3", "Stock: 10", "Stock: 2"],
            raised: &[&[], &["number < 10"], &[], &[], &["number < 10"]],
        },
        Case {
            name: "Lt CaseInsensitive",
            alert: compared(AlertType::Lt, "10", CaseInsensitive),
            checks: &["Stock: 12", "STOCK: 9"],
            raised: &[&[], &["number < 10"]],
        },
        Case {
            name: "Lt Added",
            alert: compared(AlertType::Lt, "10", Added),
            checks: &["Stock: 12 of 40", "Stock: 12 of 5"],
            raised: &[&[], &["added text number < 10"]],
        },
        Case {
            name: "Lt Removed",
            alert: compared(AlertType::Lt, "10", Removed),
            checks: &["Stock: 12 of 5", "Stock: 12 of 40"],
            raised: &[&[], &["removed text number < 10"]],
        },
        Case {
            name: "a value without a number is not greater",
            alert: compared(AlertType::Gt, "100", All),
            checks: &["sold out", "150", "sold out", "150"],
            raised: &[&[], &["number > 100"], &[], &["number > 100"]],
        },
        Case {
            name: "an operand without a number never raises",
            alert: compared(AlertType::Gt, "many", All),
            checks: &["1", "500"],
            raised: &[&[], &[]],
        },
    ]);
    let raised = run(
        &[alert(AlertType::Gt, "100")],
        Subject::SinglePage,
        &["90", "120"],
    );
    assert_eq!(raised[1][0].comparand.as_deref(), Some("100"));
    assert_eq!(raised[1][0].current.as_deref(), Some("120"));
}

#[test]
fn increased_and_decreased_with_every_compare_type() {
    use CompareType::*;
    run_table(&[
        Case {
            name: "Increased, absolute operand: strictly more than",
            alert: compared(AlertType::Increased, "10", All),
            checks: &[
                "Price 100",
                "Price 110",
                "Price 121",
                "Price 50",
                "Price 200",
            ],
            raised: &[
                &[],
                &[],
                &["number increased from 110 to 121"],
                &[],
                &["number increased from 50 to 200"],
            ],
        },
        Case {
            name: "Increased, empty operand: any rise",
            alert: compared(AlertType::Increased, "", All),
            checks: &["3.50", "3.51", "3.51", "3.49"],
            raised: &[&[], &["number increased from 3.5 to 3.51"], &[], &[]],
        },
        Case {
            name: "Increased CaseInsensitive",
            alert: compared(AlertType::Increased, "", CaseInsensitive),
            checks: &["EUR 3", "eur 4"],
            raised: &[&[], &["number increased from 3 to 4"]],
        },
        Case {
            name: "Increased Added: removed number to added number, anywhere in the value",
            alert: compared(AlertType::Increased, "", Added),
            checks: &[
                "Price 12, shipping 5",
                "Price 12, shipping 7",
                "Price 11, shipping 7",
            ],
            raised: &[&[], &["number increased from 5 to 7"], &[]],
        },
        Case {
            name: "Decreased Removed",
            alert: compared(AlertType::Decreased, "", Removed),
            checks: &["Price 12, shipping 5", "Price 12, shipping 3"],
            raised: &[&[], &["number decreased from 5 to 3"]],
        },
        Case {
            name: "Decreased, absolute operand",
            alert: compared(AlertType::Decreased, "1", All),
            checks: &["10", "9", "7.5", "9"],
            raised: &[&[], &[], &["number decreased from 9 to 7.5"], &[]],
        },
        Case {
            name: "Decreased, empty operand",
            alert: compared(AlertType::Decreased, "", All),
            checks: &["10", "11", "10.99"],
            raised: &[&[], &[], &["number decreased from 11 to 10.99"]],
        },
        Case {
            name: "no number before or now: nothing",
            alert: compared(AlertType::Increased, "", All),
            checks: &["sold out", "12", "sold out", "14"],
            raised: &[&[], &[], &[], &[]],
        },
    ]);
}

#[test]
fn percent_operands_are_relative_to_the_previous_number() {
    run_table(&[
        Case {
            name: "Increased 5%: exactly 5% is not more than 5%",
            alert: alert(AlertType::Increased, "5%"),
            checks: &["100", "105", "110.26", "110.26"],
            raised: &[&[], &[], &["number increased from 105 to 110.26"], &[]],
        },
        Case {
            name: "Decreased 5%, with a space before the sign",
            alert: alert(AlertType::Decreased, "5 %"),
            checks: &["1,234.50 EUR", "1 173,00 EUR", "1 100,00 EUR"],
            raised: &[&[], &[], &["number decreased from 1173 to 1100"]],
        },
        Case {
            name: "10% of 3.5 is 0.35 exactly: 3.85 is not more",
            alert: alert(AlertType::Increased, "10%"),
            checks: &["3.5", "3.85", "4.3"],
            raised: &[&[], &[], &["number increased from 3.85 to 4.3"]],
        },
        Case {
            name: "5% of a negative number: its magnitude",
            alert: alert(AlertType::Increased, "5%"),
            checks: &["-100", "-96", "-90"],
            raised: &[&[], &[], &["number increased from -96 to -90"]],
        },
        Case {
            name: "the same number as an absolute operand is not relative",
            alert: alert(AlertType::Increased, "5"),
            checks: &["1000", "1006"],
            raised: &[&[], &["number increased from 1000 to 1006"]],
        },
    ]);
}

#[test]
fn added_and_removed_on_a_single_page() {
    use CompareType::*;
    run_table(&[
        Case {
            name: "Added, empty operand: any added text",
            alert: compared(AlertType::Added, "", All),
            checks: &["a b", "a b", "a b c", "a c"],
            raised: &[&[], &[], &["text added"], &[]],
        },
        Case {
            name: "Added with an operand",
            alert: compared(AlertType::Added, "sale", All),
            checks: &[
                "Tea",
                "Tea\nCoffee",
                "Tea\nCoffee\nCake on sale",
                "Tea\nCoffee",
            ],
            raised: &[&[], &[], &["added \"sale\""], &[]],
        },
        Case {
            name: "Added is per change: the same text added again raises again",
            alert: compared(AlertType::Added, "new", Added),
            checks: &["x", "x\nnew 1", "x\nnew 1\nnew 2"],
            raised: &[&[], &["added \"new\""], &["added \"new\""]],
        },
        Case {
            name: "Added, CaseInsensitive",
            alert: compared(AlertType::Added, "SALE", CaseInsensitive),
            checks: &["Tea", "Tea\nCake on Sale"],
            raised: &[&[], &["added \"SALE\""]],
        },
        Case {
            name: "Added with compare Removed still looks at added text",
            alert: compared(AlertType::Added, "sale", Removed),
            checks: &["Tea", "Tea\nCake on sale"],
            raised: &[&[], &["added \"sale\""]],
        },
        Case {
            name: "Removed, empty operand",
            alert: compared(AlertType::Removed, "", All),
            checks: &["a b c", "a b c d", "a c d"],
            raised: &[&[], &[], &["text removed"]],
        },
        Case {
            name: "Removed with an operand",
            alert: compared(AlertType::Removed, "in stock", All),
            checks: &["Tea in stock\nCoffee", "Tea in stock", "Tea"],
            raised: &[&[], &[], &["removed \"in stock\""]],
        },
        Case {
            name: "Removed, CaseInsensitive",
            alert: compared(AlertType::Removed, "IN STOCK", CaseInsensitive),
            checks: &["Tea\nCoffee in stock", "Tea"],
            raised: &[&[], &["removed \"IN STOCK\""]],
        },
    ]);
    let raised = run(
        &[alert(AlertType::Added, "sale")],
        Subject::SinglePage,
        &["Tea", "Tea\nCake on sale\nPie on sale"],
    );
    assert_eq!(raised[1][0].matches, ["Cake on sale\nPie on sale"]);
    assert_eq!(raised[1][0].comparand.as_deref(), Some("Tea"));
}

// ---------------------------------------------------------------------------------------------
// Edge-triggering and flapping values

#[test]
fn a_condition_that_stays_true_raises_once() {
    run_table(&[
        Case {
            name: "Eq",
            alert: alert(AlertType::Eq, "in stock"),
            checks: &["sold out", "in stock", "in stock", "in stock", "in stock"],
            raised: &[&[], &["equals \"in stock\""], &[], &[], &[]],
        },
        Case {
            name: "Contains",
            alert: alert(AlertType::Contains, "in stock"),
            checks: &[
                "sold out",
                "in stock",
                "3 in stock",
                "2 in stock",
                "1 in stock",
            ],
            raised: &[&[], &["contains \"in stock\""], &[], &[], &[]],
        },
        Case {
            name: "NotContains",
            alert: alert(AlertType::NotContains, "sold out"),
            checks: &[
                "sold out",
                "in stock",
                "3 in stock",
                "2 in stock",
                "1 in stock",
            ],
            raised: &[&[], &["does not contain \"sold out\""], &[], &[], &[]],
        },
        Case {
            name: "Gt",
            alert: alert(AlertType::Gt, "10"),
            checks: &["5", "50", "42", "11", "12"],
            raised: &[&[], &["number > 10"], &[], &[], &[]],
        },
        Case {
            name: "Lt",
            alert: alert(AlertType::Lt, "100"),
            checks: &["500", "50", "42", "99", "1"],
            raised: &[&[], &["number < 100"], &[], &[], &[]],
        },
        Case {
            name: "true from the baseline on: never raised",
            alert: alert(AlertType::Contains, "in stock"),
            checks: &["in stock", "in stock", "3 in stock"],
            raised: &[&[], &[], &[]],
        },
    ]);
}

#[test]
fn a_value_alternating_between_two_values() {
    let alerts = [
        alert(AlertType::NotEq, ""),
        alert(AlertType::Eq, "A"),
        alert(AlertType::Error, ""),
    ];
    let checks = ["A", "B", "A", "B", "A", "B"];
    assert_eq!(
        said(&alerts, Subject::SinglePage, &checks),
        expect(&[
            &[],
            &["content changed"],
            &["content changed", "equals \"A\""],
            &["content changed"],
            &["content changed", "equals \"A\""],
            &["content changed"],
        ])
    );
    // Alternating between a value and a failure: one Error and one recovery per edge, and the
    // value conditions quiet (the value never changed).
    assert_eq!(
        said(
            &alerts,
            Subject::SinglePage,
            &["A", "!500", "A", "!500", "A"]
        ),
        expect(&[
            &[],
            &["check failed"],
            &["recovered"],
            &["check failed"],
            &["recovered"]
        ])
    );
}

// ---------------------------------------------------------------------------------------------
// Numbers

#[test]
fn numbers_in_every_written_form() {
    let table: &[(&str, Option<f64>)] = &[
        ("1,234.50", Some(1234.5)),
        ("1 234,50", Some(1234.5)),
        ("1.234,50", Some(1234.5)),
        ("1\u{a0}234,50 €", Some(1234.5)),
        ("1\u{202f}234,50 €", Some(1234.5)),
        ("1\u{2009}234.50", Some(1234.5)),
        ("CHF 1'234.50", Some(1234.5)),
        ("1,234,567.25", Some(1_234_567.25)),
        ("1.234.567,25", Some(1_234_567.25)),
        ("1 234 567", Some(1_234_567.0)),
        ("Price: 3.50 EUR", Some(3.5)),
        ("Price: 3,50 EUR", Some(3.5)),
        ("1,234", Some(1234.0)),
        ("1.234", Some(1234.0)),
        ("0.125", Some(0.125)),
        ("12,34", Some(12.34)),
        ("1234.5", Some(1234.5)),
        ("1234,567", Some(1234.567)),
        ("-5", Some(-5.0)),
        ("Temperature: -3.5 °C", Some(-3.5)),
        ("\u{2212}1 234,50", Some(-1234.5)),
        ("+7", Some(7.0)),
        ("A-4", Some(4.0)),
        ("Mon-Fri 9-17", Some(9.0)),
        ("12 items, 3 left", Some(12.0)),
        ("version 2.0.1", Some(2.0)),
        ("sold out", None),
        ("", None),
    ];
    for &(text, number) in table {
        assert_eq!(first_number(text), number, "{text:?}");
    }
}

#[test]
fn gt_and_lt_read_both_thousands_forms() {
    for value in [
        "Total: 1,234.50 EUR",
        "Total: 1 234,50 EUR",
        "Total: 1.234,50 EUR",
    ] {
        for (alert, fires) in [
            (alert(AlertType::Gt, "1234.49"), true),
            (alert(AlertType::Gt, "1234.50"), false),
            (alert(AlertType::Lt, "1 234,51"), true),
            (alert(AlertType::Lt, "1,234.5"), false),
        ] {
            let baseline = if alert.kind == AlertType::Gt {
                "0"
            } else {
                "99999"
            };
            let raised = single(alert.clone(), &[baseline, value]);
            assert_eq!(!raised[1].is_empty(), fires, "{alert:?} on {value:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Portal monitors

const SITE: &str = "https://shop.example/\nhttps://shop.example/coffee\nhttps://shop.example/tea";

#[test]
fn portal_added_and_removed_speak_of_pages() {
    let alerts = [
        alert(AlertType::NotEq, ""),
        alert(AlertType::Added, ""),
        alert(AlertType::Removed, ""),
        alert(AlertType::Added, "/sale"),
    ];
    let grown = "https://shop.example/\nhttps://shop.example/cake\nhttps://shop.example/coffee\n\
                 https://shop.example/sale\nhttps://shop.example/tea";
    let shrunk = "https://shop.example/\nhttps://shop.example/cake\nhttps://shop.example/tea\n\
                  https://shop.example/x";
    let raised = run(&alerts, Subject::Portal, &[SITE, SITE, grown, shrunk]);
    let said: Vec<Vec<&str>> = raised
        .iter()
        .map(|list| {
            list.iter()
                .map(|r| r.synthetic_expression.as_str())
                .collect()
        })
        .collect();
    assert_eq!(
        said,
        vec![
            vec![],
            vec![],
            vec!["2 pages added", "2 pages added", "1 page added"],
            vec![
                "1 page added, 2 pages removed",
                "1 page added",
                "2 pages removed"
            ],
        ]
    );
    let added = &raised[2][1];
    assert_eq!(added.job_type, JobType::Portal);
    assert_eq!(added.page_url, None);
    assert_eq!(
        added.matches,
        ["https://shop.example/cake", "https://shop.example/sale"]
    );
    assert_eq!(raised[2][2].matches, ["https://shop.example/sale"]);
    assert_eq!(
        raised[3][2].matches,
        ["https://shop.example/coffee", "https://shop.example/sale"]
    );
    assert_eq!(raised[3][0].job_type, JobType::Portal);
    assert_eq!(raised[3][0].comparand.as_deref(), Some(grown));
}

#[test]
fn portal_own_value_takes_error_not_eq_added_removed_only() {
    let alerts = [
        alert(AlertType::Error, ""),
        alert(AlertType::Contains, "tea"),
        alert(AlertType::Gt, "0"),
        alert(AlertType::Increased, ""),
    ];
    let raised = said(
        &alerts,
        Subject::Portal,
        &[
            "https://a.example/",
            "https://a.example/\nhttps://a.example/tea",
            "!start page: HTTP 503",
        ],
    );
    assert_eq!(raised, expect(&[&[], &[], &["check failed"]]));
}

#[test]
fn a_portal_page_whose_value_changed_raises_not_eq_as_portal_page() {
    let alerts = [
        alert(AlertType::Error, ""),
        alert(AlertType::NotEq, ""),
        alert(AlertType::Added, ""),
        alert(AlertType::Contains, "in stock"),
    ];
    let page = Subject::PortalPage {
        url: "https://shop.example/tea",
    };
    let raised = run(
        &alerts,
        page,
        &[
            "Tea 3.50",
            "Tea 3.50",
            "Tea 3.80",
            "!HTTP 404",
            "Tea 3.80 in stock",
        ],
    );
    let said: Vec<Vec<&str>> = raised
        .iter()
        .map(|list| {
            list.iter()
                .map(|r| r.synthetic_expression.as_str())
                .collect()
        })
        .collect();
    // Added speaks of the monitor's pages, not of a page's text; a page's failure is not the
    // monitor's Error.
    assert_eq!(
        said,
        vec![
            vec![],
            vec![],
            vec!["content changed"],
            vec![],
            vec!["content changed", "contains \"in stock\""],
        ]
    );
    let changed = &raised[2][0];
    assert_eq!(changed.alert.kind, AlertType::NotEq);
    assert_eq!(changed.job_type, JobType::PortalPage);
    assert_eq!(
        changed.page_url.as_deref(),
        Some("https://shop.example/tea")
    );
    assert_eq!(changed.current.as_deref(), Some("Tea 3.80"));
    assert_eq!(changed.comparand.as_deref(), Some("Tea 3.50"));
    // A new page's first value is its baseline.
    assert!(run(&alerts, page, &["Tea in stock"])[0].is_empty());
}

#[test]
fn subjects_apply_the_documented_types() {
    use AlertType::*;
    let page = Subject::PortalPage { url: "u" };
    let on = |subject: Subject<'_>| -> Vec<AlertType> {
        AlertType::ALL
            .iter()
            .copied()
            .filter(|&kind| subject.applies(kind))
            .collect()
    };
    assert_eq!(on(Subject::SinglePage), AlertType::ALL);
    assert_eq!(
        on(Subject::Portal),
        [Error, NotEq, Added, Removed, Unchanged]
    );
    assert_eq!(
        on(page),
        [
            NotEq,
            Eq,
            Contains,
            NotContains,
            Gt,
            Lt,
            Increased,
            Decreased
        ]
    );
    assert_eq!(page.job_type(), JobType::PortalPage);
    assert_eq!(Subject::Portal.job_type(), JobType::Portal);
    assert_eq!(Subject::SinglePage.job_type(), JobType::SinglePage);
}

// ---------------------------------------------------------------------------------------------
// Operands and state

#[test]
fn the_operand_is_alert_value_else_parameters_value() {
    let with = |value: Option<&str>, parameter: Option<&str>| Alert {
        kind: AlertType::Contains,
        value: value.map(str::to_string),
        parameters: Some(AlertParameters {
            compare: CompareType::All,
            value: parameter.map(str::to_string),
        }),
        remind_every_seconds: None,
    };
    assert_eq!(operand(&with(Some("a"), Some("b"))), "a");
    assert_eq!(operand(&with(Some(""), Some("b"))), "b");
    assert_eq!(operand(&with(None, Some("b"))), "b");
    assert_eq!(operand(&with(None, None)), "");
    assert_eq!(
        single(with(Some(""), Some("in stock")), &["sold out", "in stock"]),
        expect(&[&[], &["contains \"in stock\""]])
    );
}

#[test]
fn the_state_rebuilt_from_history_equals_the_recorded_state() {
    let at = chrono::DateTime::UNIX_EPOCH;
    let sequence = ["A", "!timeout", "B", "!HTTP 500", "!HTTP 500"];
    let mut recorded = AlertState::default();
    let mut history = Vec::new();
    for (i, spec) in sequence.iter().enumerate() {
        recorded.record(check(spec));
        history.insert(
            0,
            match check(spec) {
                Check::Value(v) => ClientData::value(at, v.to_string()),
                Check::Failed(e) => ClientData::failure(at, e.to_string()),
            },
        );
        assert_eq!(AlertState::from_history(&history), recorded, "after {i}");
    }
    assert_eq!(recorded.last_check, Some(LastCheck::Failed));
    assert_eq!(recorded.last_value.as_deref(), Some("B"));
    assert_eq!(
        AlertState::from_history(std::iter::empty()),
        AlertState::default()
    );
    // Check::from reads ClientData as the engine writes it.
    assert_eq!(Check::from(&history[0]), Check::Failed("HTTP 500"));
    assert_eq!(Check::from(&history[2]), Check::Value("B"));
}

#[test]
fn evaluate_does_not_change_the_state() {
    let state = AlertState {
        last_check: Some(LastCheck::Succeeded),
        last_value: Some("A".into()),
    };
    let alerts = [alert(AlertType::NotEq, "")];
    let first = evaluate(&state, Check::Value("B"), &alerts, Subject::SinglePage);
    let again = evaluate(&state, Check::Value("B"), &alerts, Subject::SinglePage);
    assert_eq!(first, again);
    assert_eq!(first.len(), 1);
    // The whole notification, field by field.
    assert_eq!(
        serde_json::to_value(&first[0]).unwrap(),
        serde_json::json!({
            "alert": {"type": "NotEq", "value": null, "parameters": {"compare": "All", "value": null}},
            "jobType": "SinglePage",
            "pageUrl": null,
            "current": "B",
            "comparand": "A",
            "error": null,
            "syntheticExpression": "content changed",
            "matches": []
        })
    );
}

#[test]
fn several_alerts_raise_in_their_order() {
    let alerts = [
        alert(AlertType::Contains, "in stock"),
        alert(AlertType::Error, ""),
        alert(AlertType::NotEq, ""),
        alert(AlertType::Lt, "4"),
        alert(AlertType::Decreased, "10%"),
    ];
    let raised = run(
        &alerts,
        Subject::SinglePage,
        &["!down", "5.00 sold out", "3.99 in stock"],
    );
    let kinds: Vec<AlertType> = raised[2].iter().map(|r| r.alert.kind).collect();
    assert_eq!(
        kinds,
        [
            AlertType::Contains,
            AlertType::NotEq,
            AlertType::Lt,
            AlertType::Decreased
        ]
    );
    let kinds: Vec<AlertType> = raised[1].iter().map(|r| r.alert.kind).collect();
    assert_eq!(kinds, [AlertType::Error]);
}

// ---------------------------------------------------------------------------------------------
// Normalised comparison

/// Spellings of one text: white space, NFC, invisible characters, quotes, dashes, references.
const VARIANTS: &[&str] = &[
    "“Earl Grey” – 3.50 EUR",
    "\"Earl Grey\" - 3.50 EUR",
    "&ldquo;Earl&nbsp;Grey&rdquo; &ndash; 3.50&#160;EUR",
    "„Earl\u{200b} Grey‟ — 3.50\u{202f}EUR\n",
    "  «Earl\tGrey»\u{a0}―\u{a0}3.50 EUR",
    "&#x201C;Earl Grey&#8221; &#45; 3.50 EUR",
];

#[test]
fn spelling_variants_raise_nothing_for_any_alert_type() {
    let alerts: Vec<Alert> = [
        compared(AlertType::NotEq, "", CompareType::All),
        compared(AlertType::NotEq, "", CompareType::CaseInsensitive),
        compared(AlertType::NotEq, "", CompareType::Added),
        compared(AlertType::NotEq, "", CompareType::Removed),
        alert(AlertType::Added, ""),
        alert(AlertType::Removed, ""),
        alert(AlertType::Increased, ""),
        alert(AlertType::Decreased, ""),
        // True on every variant from the start: edge-triggered, so never raised.
        alert(AlertType::Contains, "\"Earl Grey\""),
        alert(AlertType::Eq, "“Earl Grey” — 3.50 EUR"),
        alert(AlertType::Gt, "3"),
    ]
    .into();
    // Back and forth between every pair of spellings.
    let mut checks: Vec<&str> = Vec::new();
    for a in VARIANTS {
        for b in VARIANTS {
            checks.extend([*a, *b]);
        }
    }
    let raised = run(&alerts, Subject::SinglePage, &checks);
    assert!(
        raised.iter().all(Vec::is_empty),
        "spelling variants raised: {raised:?}"
    );
    // On a crawled page too.
    let page = run(&alerts, Subject::PortalPage { url: "https://a/" }, &checks);
    assert!(page.iter().all(Vec::is_empty), "{page:?}");
}

#[test]
fn a_one_character_edit_beside_spelling_variants_raises_once() {
    let not_eq = [alert(AlertType::NotEq, "")];
    for edited in [
        "“Earl Grey” – 3.51 EUR",   // a digit
        "“Earl Grey” – 3,50 EUR",   // a punctuation mark
        "“Earl Gray” – 3.50 EUR",   // a letter
        "“Earl Grey” – 3.50 EUR!",  // one more
        "“Earl Grey” – 350 EUR",    // one less
        "“Earl Grey“ – 3.50 EURO",  // a quote variant beside a real edit
        "'Earl Grey' – 3.50 EUR",   // a double quote became a single one
        "“Earl Grey” – 3.50 EUR ~", // a new mark after a space
    ] {
        // The edit, then the same edit spelled otherwise: one notification, at the edit.
        let respelled = edited.replace(' ', "\u{a0}");
        let mut checks: Vec<&str> = VARIANTS.to_vec();
        checks.extend([edited, respelled.as_str()]);
        let said = single(not_eq[0].clone(), &checks);
        let raised: Vec<usize> = (0..said.len()).filter(|&i| !said[i].is_empty()).collect();
        assert_eq!(raised, [VARIANTS.len()], "{edited:?}: {said:?}");
    }
}

#[test]
fn conditions_compare_keys_and_report_values_as_checked() {
    // A curly-quoted operand matches a straight-quoted value; the notification carries the
    // value as the page gave it.
    let raised = run(
        &[alert(AlertType::Contains, "“in stock”")],
        Subject::SinglePage,
        &["Tea: \"sold out\"", "Tea:\u{a0}\"in  stock\""],
    );
    assert_eq!(raised[1].len(), 1);
    assert_eq!(
        raised[1][0].current.as_deref(),
        Some("Tea:\u{a0}\"in  stock\"")
    );
    assert_eq!(raised[1][0].comparand.as_deref(), Some("“in stock”"));
    // CaseInsensitive NotEq: case and spelling alone are no change.
    assert_eq!(
        single(
            compared(AlertType::NotEq, "", CompareType::CaseInsensitive),
            &["TEA – Ｘ", "tea - Ｘ", "tea - X"]
        ),
        expect(&[&[], &[], &["content changed"]])
    );
    // Added text is shown in key form, and a real addition beside a variant raises it alone.
    let raised = run(
        &[alert(AlertType::Added, "")],
        Subject::SinglePage,
        &["Tea&nbsp;&amp; cake", "Tea & cake and “new”"],
    );
    assert_eq!(raised[1][0].matches, ["and \"new\""]);
    // Numbers read through minus and space variants: -1 234 to -1 233 is an increase.
    assert_eq!(
        single(
            alert(AlertType::Increased, ""),
            &[
                "\u{2212}1\u{202f}234 °C",
                "-1 234 °C",
                "&minus;1&thinsp;233 °C"
            ]
        ),
        expect(&[&[], &[], &["number increased from -1234 to -1233"]])
    );
}

// --- Confirmation (wachet::alerts::confirm): what raises once changes and failures must last.

mod confirmation {
    use super::{alert, check};
    use chrono::{DateTime, TimeZone, Utc};
    use wachet::alerts::Subject;
    use wachet::alerts::confirm::{ConfirmState, Confirmation, decide};
    use wachet::model::{Alert, AlertType};

    /// One check's outcome: what it raised (`expression@first-seen-second`) and whether it asked
    /// for an early check.
    type Step = (Vec<String>, bool);

    fn at(second: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(second, 0).unwrap()
    }

    /// Runs `checks` (a value, or `!error`), one a second, through one state.
    fn steps(alerts: &[Alert], policy: Confirmation, checks: &[&str]) -> Vec<Step> {
        let mut state = ConfirmState::default();
        checks
            .iter()
            .enumerate()
            .map(|(i, spec)| {
                let d = decide(
                    &state,
                    check(spec),
                    at(i as i64),
                    alerts,
                    Subject::SinglePage,
                    &policy,
                );
                state = d.state;
                let raised = d
                    .raised
                    .iter()
                    .map(|r| match r.first_seen {
                        Some(t) => format!("{}@{}", r.synthetic_expression, t.timestamp()),
                        None => r.synthetic_expression.clone(),
                    })
                    .collect();
                (raised, d.recheck)
            })
            .collect()
    }

    fn step(raised: &[&str], recheck: bool) -> Step {
        (raised.iter().map(|s| s.to_string()).collect(), recheck)
    }

    fn both() -> Vec<Alert> {
        vec![alert(AlertType::Error, ""), alert(AlertType::NotEq, "")]
    }

    const QUIET: fn() -> Step = || step(&[], false);
    const WAIT: fn() -> Step = || step(&[], true);

    #[test]
    fn a_change_raises_once_its_confirming_check_agrees() {
        let got = steps(&both(), Confirmation::default(), &["A", "B", "B", "B"]);
        assert_eq!(
            got,
            [
                QUIET(),
                WAIT(),
                step(&["content changed@1"], false),
                QUIET()
            ]
        );
    }

    #[test]
    fn a_value_shown_once_raises_nothing() {
        // A flip-flop (a stale replica answering one request), and a revert during confirmation.
        let got = steps(&both(), Confirmation::default(), &["A", "B", "A", "A"]);
        assert_eq!(got, [QUIET(), WAIT(), QUIET(), QUIET()]);
        let got = steps(
            &both(),
            Confirmation::default(),
            &["A", "B", "A", "B", "A", "B", "A"],
        );
        assert!(got.iter().all(|(raised, _)| raised.is_empty()), "{got:?}");
    }

    #[test]
    fn a_third_check_decides_when_two_disagree() {
        // A -> B -> C -> C: C was seen twice in a row and wins, first seen at the third check.
        let got = steps(&both(), Confirmation::default(), &["A", "B", "C", "C"]);
        assert_eq!(
            got,
            [QUIET(), WAIT(), WAIT(), step(&["content changed@2"], false)]
        );
        // A -> B -> C -> B: no value lasted, but the page never came back to A in three
        // checks: the change raises (first seen at B), and B is the value compared with next.
        // A coming back right after is a flip to a variant that lasted lately (flapping):
        // silent, where it used to be a candidate.
        let got = steps(&both(), Confirmation::default(), &["A", "B", "C", "B", "A"]);
        assert_eq!(
            got,
            [
                QUIET(),
                WAIT(),
                WAIT(),
                step(&["content changed@1"], false),
                QUIET()
            ]
        );
        // A -> B -> C -> D -> D: the same, with D the value compared with next.
        let got = steps(
            &both(),
            Confirmation::default(),
            &["A", "B", "C", "D", "D", "D"],
        );
        assert_eq!(
            got,
            [
                QUIET(),
                WAIT(),
                WAIT(),
                step(&["content changed@1"], false),
                QUIET(),
                QUIET()
            ]
        );
        // A page that differs on every check raises once (its fourth value), then has no
        // stable part (wachet::alerts::noise): its changes are recorded, never alerted on.
        let every: Vec<String> = (0..10).map(|n| format!("V{n}")).collect();
        let every: Vec<&str> = every.iter().map(String::as_str).collect();
        let got = steps(&both(), Confirmation::default(), &every);
        let raised = got.iter().filter(|(r, _)| !r.is_empty()).count();
        assert_eq!(raised, 1, "{got:?}");
    }

    #[test]
    fn a_respelled_value_is_no_change_to_confirm() {
        let got = steps(
            &both(),
            Confirmation::default(),
            &["Tea 3.50", "Tea\u{a0} 3.50"],
        );
        assert_eq!(got, [QUIET(), QUIET()]);
    }

    #[test]
    fn content_alerts_wait_for_the_confirmation_too() {
        let alerts = [alert(AlertType::Contains, "in stock")];
        let got = steps(
            &alerts,
            Confirmation::default(),
            &["sold out", "in stock", "sold out", "in stock", "in stock"],
        );
        assert_eq!(
            got,
            [
                QUIET(),
                WAIT(),
                QUIET(),
                WAIT(),
                step(&[r#"contains "in stock"@3"#], false)
            ]
        );
    }

    #[test]
    fn a_failure_between_a_change_and_its_confirmation_is_skipped() {
        let got = steps(
            &both(),
            Confirmation::default(),
            &["A", "B", "!HTTP 503", "B"],
        );
        assert_eq!(
            got,
            [QUIET(), WAIT(), WAIT(), step(&["content changed@1"], false)]
        );
    }

    #[test]
    fn a_failure_of_any_kind_raises_only_when_it_lasts() {
        // The kind makes no difference: a 404 is confirmed like a timeout.
        for error in [
            "timed out after 30 s",
            "connection refused",
            "HTTP 503",
            "HTTP 429",
            "rendering failed",
            "the site answered with a bot challenge",
            "the document is empty",
            "HTTP 404",
            "xPath matched nothing",
        ] {
            let failure = format!("!{error}");
            let once = steps(&both(), Confirmation::default(), &["A", &failure, "A"]);
            assert_eq!(once, [QUIET(), WAIT(), QUIET()], "{error} once");
            let twice = steps(
                &both(),
                Confirmation::default(),
                &["A", &failure, &failure, &failure, "A"],
            );
            assert_eq!(
                twice,
                [
                    QUIET(),
                    WAIT(),
                    step(&["check failed@1"], false),
                    QUIET(),
                    step(&["recovered"], false)
                ],
                "{error} lasting"
            );
        }
    }

    #[test]
    fn a_page_alternating_between_two_errors_raises_one_error() {
        let got = steps(
            &both(),
            Confirmation::default(),
            &["A", "!HTTP 503", "!timed out", "!HTTP 503", "!timed out"],
        );
        assert_eq!(
            got,
            [
                QUIET(),
                WAIT(),
                step(&["check failed@1"], false),
                QUIET(),
                QUIET()
            ]
        );
    }

    #[test]
    fn failures_must_last_failing_for_besides_their_count() {
        let policy = || Confirmation {
            failing_for: std::time::Duration::from_secs(3),
            ..Confirmation::default()
        };
        // Two quick failures of a flaky server, a second apart: nothing to tell anyone.
        let got = steps(&both(), policy(), &["A", "!HTTP 503", "!HTTP 503", "A"]);
        assert_eq!(got, [QUIET(), WAIT(), WAIT(), QUIET()]);
        // A failure that lasts three seconds raises once, dated from its first failed check.
        let got = steps(&both(), policy(), &["A", "!x", "!x", "!x", "!x", "!x", "A"]);
        assert_eq!(
            got,
            [
                QUIET(),
                WAIT(),
                WAIT(),
                WAIT(),
                step(&["check failed@1"], false),
                QUIET(),
                step(&["recovered"], false)
            ]
        );
    }

    #[test]
    fn error_after_failures_chooses_how_many() {
        let one = Confirmation {
            error_after_failures: 1,
            ..Confirmation::default()
        };
        let got = steps(&both(), one, &["A", "!HTTP 500", "A"]);
        assert_eq!(
            got,
            [
                QUIET(),
                step(&["check failed"], false),
                step(&["recovered"], false)
            ]
        );
        let three = Confirmation {
            error_after_failures: 3,
            ..Confirmation::default()
        };
        let got = steps(&both(), three, &["A", "!x", "!x", "A", "!x", "!x", "!x"]);
        assert_eq!(
            got,
            [
                QUIET(),
                WAIT(),
                WAIT(),
                QUIET(),
                WAIT(),
                WAIT(),
                step(&["check failed@4"], false)
            ]
        );
    }

    #[test]
    fn the_first_check_failing_waits_for_the_retry_too() {
        let got = steps(
            &both(),
            Confirmation::default(),
            &["!HTTP 404", "!HTTP 404", "A"],
        );
        assert_eq!(
            got,
            [
                WAIT(),
                step(&["check failed@0"], false),
                step(&["recovered"], false)
            ]
        );
    }

    #[test]
    fn a_monitors_setting_is_its_policy() {
        let mut monitor = wachet::Monitor::new("https://example.com/");
        assert_eq!(
            Confirmation::of(&monitor).error_after_failures,
            Confirmation::default().error_after_failures
        );
        monitor.error_after_failures = Some(3);
        assert_eq!(Confirmation::of(&monitor).error_after_failures, 3);
    }
}

// ---------------------------------------------------------------------------------------------
// Flapping: A/B templates and stale replicas through `confirm::decide`

mod flapping {
    use chrono::{TimeZone, Utc};
    use wachet::alerts::compare::Comparator;
    use wachet::alerts::confirm::{ConfirmState, Confirmation, decide};
    use wachet::alerts::{Check, Subject};
    use wachet::model::{Alert, AlertType};

    /// A deterministic coin: xorshift64.
    struct Coin(u64);

    impl Coin {
        fn heads(&mut self) -> bool {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 >> 63 == 1
        }
    }

    fn not_eq() -> Vec<Alert> {
        vec![Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
            remind_every_seconds: None,
        }]
    }

    /// Runs `values` (one check each, one a second) through `state`; the indices of the checks
    /// that raised.
    fn raised_at(state: &mut ConfirmState, values: &[String]) -> Vec<usize> {
        let policy = Confirmation::default();
        let alerts = not_eq();
        let mut raised = Vec::new();
        for (i, value) in values.iter().enumerate() {
            let at = Utc.timestamp_opt(i as i64 * 60, 0).unwrap();
            let d = decide(
                state,
                Check::Value(value),
                at,
                &alerts,
                Subject::SinglePage,
                &policy,
            );
            if !d.raised.is_empty() {
                raised.push(i);
            }
            *state = d.state;
        }
        raised
    }

    /// The pricing page's two templates over the same facts: a table and cards.
    fn template(b: bool, team: &str, sso: bool) -> String {
        let sso = if sso { " Single sign-on included." } else { "" };
        if b {
            format!(
                "Plans that grow with you\nStarter $0/mo per seat 3 projects\nTeam {team}/mo per seat Unlimited projects{sso}\nStart free trial\nTrusted by 4,000+ teams"
            )
        } else {
            format!(
                "Pricing\nSimple plans for every team.\nStarter | $0 per user / month | 3 projects\nTeam | {team} per user / month | Unlimited projects{sso}\nCompare all features"
            )
        }
    }

    /// `n` checks of the A/B page, each template on half the requests.
    fn ab(coin: &mut Coin, n: usize, team: &str, sso: bool) -> Vec<String> {
        (0..n).map(|_| template(coin.heads(), team, sso)).collect()
    }

    /// A new monitor's state after its first check and quick samples showed `samples`.
    fn created(first: &str, samples: &[String]) -> ConfirmState {
        let mut state = ConfirmState::default();
        raised_at(&mut state, &[first.to_string()]);
        let samples: Vec<&str> = samples.iter().map(String::as_str).collect();
        state.warm_up(
            &Comparator::default(),
            first,
            &samples,
            Utc.timestamp_opt(0, 0).unwrap(),
        );
        state
    }

    #[test]
    fn an_ab_page_raises_nothing_on_its_flips() {
        for seed in 1..=50u64 {
            // The quick samples at creation showed both templates.
            let mut coin = Coin(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let a = template(false, "$29", true);
            let b = template(true, "$29", true);
            let mut state = created(&a, &[b.clone(), a.clone()]);
            let checks = ab(&mut coin, 40, "$29", true);
            assert_eq!(
                raised_at(&mut state, &checks),
                [] as [usize; 0],
                "seed {seed}"
            );
        }
    }

    #[test]
    fn an_ab_page_whose_other_template_was_never_seen_raises_once_at_most() {
        // Nothing tells the other template's first lasting appearance from a real change: it
        // raises once, when it is first seen twice in a row (seen once and gone, it is no
        // variant yet), and never after.
        for seed in 1..=50u64 {
            let mut coin = Coin(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut checks = vec![template(false, "$29", true)];
            checks.extend(ab(&mut coin, 40, "$29", true));
            let other = |i: usize| checks[i] != checks[0];
            let expected: Vec<usize> = (2..checks.len())
                .find(|&i| other(i - 1) && other(i))
                .into_iter()
                .collect();
            let mut state = ConfirmState::default();
            assert_eq!(raised_at(&mut state, &checks), expected, "seed {seed}");
        }
    }

    #[test]
    fn real_changes_under_ab_raise_once_each_after_the_unseen_template_raised() {
        // The quick samples saw one template; the other one's first lasting appearance raised
        // (nothing tells it from a change). Once the page flips back, the two are one content:
        // each later real change raises once, through whichever template shows it first.
        for seed in 1..=50u64 {
            let mut coin = Coin(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let a = template(false, "$29", true);
            let b = template(true, "$29", true);
            let mut state = created(&a, &[a.clone(), a.clone()]);
            let mut checks = vec![b.clone(), b, a];
            checks.extend(ab(&mut coin, 17, "$29", true));
            checks.extend(ab(&mut coin, 20, "$39", true));
            checks.extend(ab(&mut coin, 20, "$39", false));
            let raised = raised_at(&mut state, &checks);
            assert_eq!(raised.len(), 3, "seed {seed}: {raised:?}");
            assert_eq!(raised[0], 1, "seed {seed}: {raised:?}");
            assert!((20..24).contains(&raised[1]), "seed {seed}: {raised:?}");
            assert!((40..44).contains(&raised[2]), "seed {seed}: {raised:?}");
        }
    }

    #[test]
    fn a_real_change_under_ab_raises_once_and_its_revert_once() {
        for seed in 1..=50u64 {
            let mut coin = Coin(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let a = template(false, "$29", true);
            let b = template(true, "$29", true);
            // The samples saw the page go back from the other template (one it stayed at to
            // the last may be a change that came while the monitor was made).
            let mut state = created(&a, &[b, a.clone()]);
            // A one-character edit in both templates at check 20, reverted at check 40.
            let mut checks = ab(&mut coin, 20, "$29", true);
            checks.extend(ab(&mut coin, 20, "$39", true));
            checks.extend(ab(&mut coin, 20, "$29", true));
            let raised = raised_at(&mut state, &checks);
            assert_eq!(raised.len(), 2, "seed {seed}: {raised:?}");
            assert!((20..24).contains(&raised[0]), "seed {seed}: {raised:?}");
            assert!((40..44).contains(&raised[1]), "seed {seed}: {raised:?}");
        }
    }

    #[test]
    fn a_removed_sentence_under_ab_raises_once() {
        for seed in 1..=50u64 {
            let mut coin = Coin(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut state = created(
                &template(false, "$29", true),
                &[template(true, "$29", true), template(false, "$29", true)],
            );
            let mut checks = ab(&mut coin, 20, "$29", true);
            checks.extend(ab(&mut coin, 40, "$29", false));
            let raised = raised_at(&mut state, &checks);
            assert_eq!(raised.len(), 1, "seed {seed}: {raised:?}");
            assert!((20..24).contains(&raised[0]), "seed {seed}: {raised:?}");
        }
    }

    /// The changelog's versions: a release number, then a removed sentence.
    fn version(v: i64) -> String {
        let release = if v >= 1 { "v4.2.1" } else { "v4.2.0" };
        let notes = if v >= 2 {
            "Faster compaction of large tables."
        } else {
            "Faster compaction of large tables. Replication now resumes after a partition."
        };
        format!("Latest release: {release}\n{notes}\nv4.1.3: Security fixes.")
    }

    #[test]
    fn a_stale_replica_raises_once_per_real_change() {
        // One request in five reaches a replica 7 requests behind; every phase of that cycle,
        // so it also answers some confirming checks.
        for phase in 0..5 {
            let changes = [20, 45];
            let current = |t: i64| changes.iter().filter(|&&c| t >= c).count() as i64;
            let checks: Vec<String> = (0..80i64)
                .map(|t| {
                    let stale = (t + phase) % 5 == 0;
                    version(current(if stale { t - 7 } else { t }))
                })
                .collect();
            let mut state = ConfirmState::default();
            let raised = raised_at(&mut state, &checks);
            assert_eq!(raised.len(), 2, "phase {phase}: {raised:?}");
            assert!((20..24).contains(&raised[0]), "phase {phase}: {raised:?}");
            assert!((45..49).contains(&raised[1]), "phase {phase}: {raised:?}");
        }
    }

    #[test]
    fn a_change_confirmed_past_a_stale_answer_still_raises() {
        // The confirming check met the stale replica: the new value is no variant yet, so it
        // is a candidate again and raises once it lasts.
        let checks: Vec<String> = ["old", "new", "old", "new", "new", "new", "old", "new"]
            .map(String::from)
            .to_vec();
        let mut state = ConfirmState::default();
        assert_eq!(raised_at(&mut state, &checks), [4]);
    }

    #[test]
    fn a_revert_after_the_value_was_stable_raises() {
        let mut checks: Vec<String> = vec!["A".into(), "B".into(), "B".into()];
        checks.extend(std::iter::repeat_n("B".to_string(), 30));
        checks.extend(["A".to_string(), "A".to_string()]);
        let mut state = ConfirmState::default();
        assert_eq!(raised_at(&mut state, &checks), [2, 34]);
        // Within the window a return is a flip: the rule's other side, deliberately.
        let quick: Vec<String> = ["A", "B", "B", "B", "B", "A", "A", "B"]
            .map(String::from)
            .to_vec();
        let mut state = ConfirmState::default();
        assert_eq!(raised_at(&mut state, &quick), [2]);
    }

    #[test]
    fn the_state_stays_small_and_old_states_load() {
        // A page different on every check, 10 KB a value, for 500 checks.
        let mut state = ConfirmState::default();
        let values: Vec<String> = (0..500)
            .map(|n| format!("{n} {}", "word ".repeat(2000)))
            .collect();
        raised_at(&mut state, &values);
        state.pending.clear();
        state.alerts.last_value = None;
        let json = serde_json::to_string(&state).unwrap();
        assert!(json.len() < 4096, "{} bytes: {json}", json.len());
        // A state stored before variants existed.
        let mut old = ConfirmState::default();
        raised_at(&mut old, &["A".into()]);
        let mut old = serde_json::to_value(&old).unwrap();
        assert!(old.as_object_mut().unwrap().remove("variants").is_some());
        let mut state: ConfirmState = serde_json::from_value(old).unwrap();
        assert_eq!(
            raised_at(&mut state, &["A".into(), "B".into(), "B".into()]),
            [2]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Order and format where they do not matter: `compare::Comparator`

mod comparison {
    use chrono::{TimeZone, Utc};
    use wachet::alerts::compare::Comparator;
    use wachet::alerts::confirm::{ConfirmState, Confirmation, decide};
    use wachet::alerts::{Check, Subject};
    use wachet::model::{Alert, AlertType, LineOrder, Monitor, NoiseMask};

    fn comparator(lines: LineOrder, masks: &[&str]) -> Comparator {
        let mut monitor = Monitor::new("https://api.example/items");
        monitor.compare_lines = Some(lines);
        monitor.noise = Some(
            masks
                .iter()
                .map(|p| NoiseMask {
                    pattern: p.to_string(),
                    learned: true,
                    active: true,
                    example: None,
                })
                .collect(),
        );
        Comparator::of(&monitor).unwrap()
    }

    const ORDERED: LineOrder = LineOrder::Ordered;

    #[test]
    fn json_key_order_number_spelling_and_white_space_are_no_change() {
        let c = Comparator::default();
        let first = r#"{"id": 7, "name": "Earl Grey", "price": 12.50, "stock": 1200, "tags": ["tea", "black"]}"#;
        for same in [
            r#"{"tags":["tea","black"],"stock":1200,"price":12.5,"name":"Earl Grey","id":7}"#,
            "{\n  \"name\": \"Earl\\u00a0Grey\",\n  \"id\": 7.0,\n  \"price\": 1.25e1,\n  \"stock\": 1.2E3,\n  \"tags\": [\"tea\", \"black\"]\n}\n",
            r#"{"id":7,"name":"Earl  Grey","price":12.500,"stock":1200,"tags":["tea","black"]}"#,
        ] {
            assert!(c.same(first, same), "{same}");
        }
        for changed in [
            r#"{"id": 7, "name": "Earl Grey", "price": 12.51, "stock": 1200, "tags": ["tea", "black"]}"#,
            r#"{"id": 7, "name": "Earl Gray", "price": 12.50, "stock": 1200, "tags": ["tea", "black"]}"#,
            r#"{"id": 7, "name": "Earl Grey", "price": 12.50, "stock": 1200, "tags": ["black", "tea"]}"#,
            r#"{"id": 7, "name": "Earl Grey", "price": 12.50, "stock": 1200, "tags": ["tea"]}"#,
            r#"{"id": 7, "name": "Earl Grey", "price": 12.50, "stock": 1200, "tags": ["tea", "black"], "new": true}"#,
            r#"{"id": "7", "name": "Earl Grey", "price": 12.50, "stock": 1200, "tags": ["tea", "black"]}"#,
        ] {
            assert!(!c.same(first, changed), "{changed}");
        }
        // Big integers and long fractions are compared exactly, not through a float.
        assert!(!c.same(r#"{"n": 9007199254740993}"#, r#"{"n": 9007199254740992}"#));
        assert!(c.same(r#"{"n": 9007199254740993}"#, r#"{"n": 9007199254740993.0}"#));
    }

    #[test]
    fn a_value_that_is_not_a_json_document_is_text() {
        let c = Comparator::default();
        // Invalid documents: compared as text, so their spacing is all that is forgiven.
        assert!(c.same(r#"{"a": 1, "b": 2"#, "{\"a\":  1,\n\"b\": 2"));
        assert!(!c.same(r#"{"a": 1, "b": 2"#, r#"{"b": 2, "a": 1"#));
        // A scalar is text: "5.0" and "5" are different texts.
        assert!(!c.same("5.0", "5"));
        assert_eq!(c.masked_line_key("Tea\n 3.50"), "Tea\n3.50");
    }

    #[test]
    fn masks_on_json_match_any_key_order() {
        let c = comparator(ORDERED, &[r#""requestId": (".*")"#, r#""servedAt": (\S+)"#]);
        let a = r#"{"requestId": "9f1c2e", "servedAt": "2026-11-25T01:02:03Z", "items": [{"sku": "T-1", "price": 3.5}]}"#;
        let b = r#"{"items":[{"price":3.50,"sku":"T-1"}],"servedAt":"2026-11-25T01:09:44Z","requestId":"77ab0d"}"#;
        assert!(c.same(a, b));
        // A real change beside the masked spans.
        let priced = b.replace("3.50", "3.60");
        assert!(!c.same(a, &priced));
        // Learning and diffs read one key a line, masked.
        assert_eq!(
            c.masked_line_key(b),
            "{\n\"items\": [\n{\n\"price\": 3.5\n\"sku\": \"T-1\"\n}\n]\n\"requestId\": \u{2026}\n\"servedAt\": \u{2026}\n}"
        );
        // The spans a notification dims are in the line form.
        let form = c.line_form(b);
        let dimmed: Vec<&str> = c.mask_spans(&form).into_iter().map(|r| &form[r]).collect();
        assert_eq!(dimmed, ["\"77ab0d\"", "\"2026-11-25T01:09:44Z\""]);
    }

    #[test]
    fn lines_as_a_set_ignore_order_not_content() {
        let c = comparator(LineOrder::Set, &[]);
        let list = "Berlin — 3 stores\nParis — 2 stores\nRome — 1 store\nParis — 2 stores";
        for same in [
            "Rome — 1 store\nParis — 2 stores\nBerlin — 3 stores\nParis — 2 stores",
            "Paris – 2 stores\n\nBerlin — 3 stores\nParis — 2 stores\n  Rome — 1 store",
        ] {
            assert!(c.same(list, same), "{same:?}");
        }
        for changed in [
            // A line added, removed, edited, a duplicate gone (a multiset, not a set).
            "Rome — 1 store\nParis — 2 stores\nBerlin — 3 stores\nParis — 2 stores\nOslo — 1 store",
            "Rome — 1 store\nParis — 2 stores\nBerlin — 3 stores",
            "Rome — 1 store\nParis — 2 stores\nBerlin — 4 stores\nParis — 2 stores",
            "Rome — 1 store\nParis — 2 stores\nBerlin — 3 stores\nBerlin — 3 stores",
        ] {
            assert!(!c.same(list, changed), "{changed:?}");
        }
        // In order, the shuffle is a change.
        assert!(!Comparator::default().same(
            list,
            "Rome — 1 store\nParis — 2 stores\nBerlin — 3 stores\nParis — 2 stores"
        ));
    }

    #[test]
    fn json_arrays_as_sets_keep_each_element_whole() {
        let c = comparator(LineOrder::Set, &[r#""seenAt": (\d+)"#]);
        let a = r#"[{"name": "Tea", "price": 3}, {"name": "Cake", "price": 2, "seenAt": 1}]"#;
        let shuffled =
            r#"[{"seenAt": 99, "price": 2, "name": "Cake"}, {"price": 3, "name": "Tea"}]"#;
        assert!(c.same(a, shuffled));
        // The prices swapped between the elements: a change, though the lines are the same.
        let swapped = r#"[{"name": "Tea", "price": 2}, {"name": "Cake", "price": 3, "seenAt": 1}]"#;
        assert!(!c.same(a, swapped));
        let added = r#"[{"name": "Tea", "price": 3}, {"name": "Cake", "price": 2}, {"name": "Pie", "price": 4}]"#;
        assert!(!c.same(a, added));
        // Nested arrays too.
        assert!(c.same(r#"{"a": [[1, 2], [3]]}"#, r#"{"a": [[3], [2, 1]]}"#));
        assert!(!c.same(r#"{"a": [[1, 2], [3]]}"#, r#"{"a": [[3, 1], [2]]}"#));
        // In order, a reordered array is a change.
        assert!(!Comparator::default().same(a, shuffled));
    }

    #[test]
    fn a_json_api_with_varying_key_order_raises_only_its_real_change() {
        let alerts = [Alert {
            kind: AlertType::NotEq,
            value: None,
            parameters: None,
            remind_every_seconds: None,
        }];
        let mut monitor = Monitor::new("https://api.example/status");
        monitor.noise = Some(vec![NoiseMask {
            pattern: r#""requestId": (".*")"#.into(),
            learned: true,
            active: true,
            example: None,
        }]);
        let policy = Confirmation::of(&monitor);
        let body = |id: u32, order: bool, open: bool| {
            let fields = [
                format!(r#""requestId": "r{id:06x}""#),
                format!(r#""open": {open}"#),
                r#""queue": 12.0"#.to_string(),
            ];
            let fields: Vec<&String> = if order {
                fields.iter().collect()
            } else {
                fields.iter().rev().collect()
            };
            format!(
                "{{{}}}",
                fields
                    .iter()
                    .map(|f| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let mut state = ConfirmState::default();
        let mut raised = Vec::new();
        for i in 0..30u32 {
            let value = body(i * 7919, i % 3 == 0, i < 20);
            let d = decide(
                &state,
                Check::Value(&value),
                Utc.timestamp_opt(i64::from(i), 0).unwrap(),
                &alerts,
                Subject::SinglePage,
                &policy,
            );
            if !d.raised.is_empty() {
                raised.push(i);
            }
            state = d.state;
        }
        assert_eq!(raised, [21]);
    }

    #[test]
    fn ten_megabytes_of_json_are_compared() {
        let item = |i: usize, reversed: bool| {
            if reversed {
                format!(r#"{{"price": {}.50, "id": {i}}}"#, i % 97)
            } else {
                format!(r#"{{"id":{i},"price":{}.5}}"#, i % 97)
            }
        };
        let doc = |n: usize, reversed: bool, edit: Option<usize>| {
            let items: Vec<String> = (0..n)
                .map(|i| match edit {
                    Some(e) if e == i => r#"{"id": -1, "price": 0}"#.to_string(),
                    _ => item(i, reversed),
                })
                .collect();
            format!("[{}]", items.join(","))
        };
        let n = 400_000;
        let a = doc(n, false, None);
        assert!(a.len() > 10_000_000, "{}", a.len());
        let c = Comparator::default();
        assert!(c.same(&a, &doc(n, true, None)));
        assert!(!c.same(&a, &doc(n, true, Some(n / 2))));
        let set = comparator(LineOrder::Set, &[]);
        assert!(set.same(&a, &doc(n, true, None)));
        // Nesting beyond the limit is text, read without recursion.
        let deep = format!("{}{}", "[".repeat(5_000_000), "]".repeat(5_000_000));
        assert!(!c.same(&deep, &deep.replace("[", "[ ")));
        assert!(c.same(&deep, &deep));
    }
}

#[test]
fn numeric_alerts_read_price_list_shapes_by_value() {
    // The same price in the formats shop templates and CDN edges produce, with no-break and
    // narrow no-break spaces: no Increased or Decreased between them; a real drop is one.
    let shapes = [
        "1 249,90 €",
        "€1\u{a0}249,90",
        "1\u{202f}249,90 EUR",
        "EUR 1\u{a0}249,90",
        "1\u{a0}249,90\u{a0}€",
    ];
    for kind in [AlertType::Increased, AlertType::Decreased] {
        let mut checks: Vec<&str> = shapes.to_vec();
        checks.push("€1\u{202f}199,90");
        let raised = single(alert(kind, ""), &checks);
        let fired: Vec<usize> = (0..raised.len())
            .filter(|&i| !raised[i].is_empty())
            .collect();
        let expected: &[usize] = if kind == AlertType::Decreased {
            &[5]
        } else {
            &[]
        };
        assert_eq!(fired, expected, "{kind:?}: {raised:?}");
    }
    for shape in shapes {
        assert_eq!(first_number(shape), Some(1249.9), "{shape:?}");
        let gt = single(alert(AlertType::Gt, "1249.89"), &["0", shape]);
        let lt = single(alert(AlertType::Lt, "1 249,90"), &["99999", shape]);
        assert!(!gt[1].is_empty() && lt[1].is_empty(), "{shape:?}");
    }
}
