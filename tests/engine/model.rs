//! The API resources against the specification's request shapes: JSON names, enumerations as
//! names or integers, and errors that name the field.

use serde_json::{Value, json};
use wachet::model::*;

fn roundtrip<T: serde::de::DeserializeOwned + serde::Serialize>(input: &Value) -> Value {
    let parsed: T = from_json(input.to_string().as_bytes()).unwrap();
    serde_json::to_value(parsed).unwrap()
}

#[test]
fn single_page_monitor_request_round_trips() {
    let request = json!({
        "name": "Price of tea",
        "url": "https://shop.example/tea",
        "xPath": "//span[@class='price']",
        "excludeXPath": "//div[@id='ads']",
        "regex": "(\\d+[.,]\\d+)",
        "jobType": "SinglePage",
        "alerts": [
            {"type": "Error"},
            {"type": "NotEq", "value": null, "parameters": {"compare": "Added", "value": "5"}}
        ],
        "recurrenceInSeconds": 3600,
        "notificationEndpoints": [
            {"type": "Webhook", "value": "https://hooks.example/x"},
            {"type": "Email", "value": "me@example.com"}
        ]
    });
    let out = roundtrip::<Monitor>(&request);
    for key in [
        "name",
        "url",
        "xPath",
        "excludeXPath",
        "regex",
        "jobType",
        "recurrenceInSeconds",
        "notificationEndpoints",
    ] {
        assert_eq!(out[key], request[key], "{key}");
    }
    assert_eq!(
        out["alerts"][0],
        json!({"type": "Error", "value": null, "parameters": {"compare": "All", "value": null}})
    );
    assert_eq!(
        out["alerts"][1]["parameters"],
        json!({"compare": "Added", "value": "5"})
    );
    // Defaults are written out.
    assert_eq!(out["dynamicContent"], json!(false));
    assert_eq!(out["location"], json!("Default"));
    // The specification types these as never null.
    assert_eq!(out["crawlingDepth"], json!(2));
    assert_eq!(out["urlFilter"], json!({"include": null, "exclude": null}));
    assert_eq!(
        out["data"],
        json!({"lastCheckTimestamp": "0001-01-01T00:00:00Z", "valueChangedTimestamp": null,
               "raw": null, "error": null, "diff": null})
    );
    let back: Monitor = from_json(out.to_string().as_bytes()).unwrap();
    assert_eq!(back.data, None, "read back as no data");
}

#[test]
fn portal_monitor_with_url_filter_and_proxies_round_trips() {
    let request = json!({
        "id": "42",
        "name": "Blog",
        "url": "https://blog.example/",
        "jobType": "Portal",
        "crawlingDepth": 3,
        "crawlPagesFromAllDomains": true,
        "crawlBinaryContent": false,
        "urlFilter": {
            "include": [{"filter": "/posts/", "type": "Contains"}],
            "exclude": [{"filter": "\\?page=\\d+", "type": "Regex"}]
        },
        "proxies": [{"location": "us"}, {"location": "gb"}],
        "alerts": [{"type": "Added"}],
        "recurrenceInSeconds": 86400
    });
    let out = roundtrip::<Monitor>(&request);
    for key in [
        "id",
        "jobType",
        "crawlingDepth",
        "crawlPagesFromAllDomains",
        "urlFilter",
        "proxies",
        "alerts",
    ] {
        if key == "alerts" {
            assert_eq!(out[key][0]["type"], json!("Added"));
        } else {
            assert_eq!(out[key], request[key], "{key}");
        }
    }
    let monitor: Monitor = from_json(request.to_string().as_bytes()).unwrap();
    assert_eq!(monitor.job_type, ClientJobType::Portal);
    let filter = monitor.url_filter.unwrap();
    assert_eq!(filter.exclude.unwrap()[0].kind, UrlFilterType::Regex);
}

#[test]
fn enumerations_take_any_case_names_or_integers_and_write_names() {
    let monitor: Monitor = from_json(
        br#"{"url": "https://x.example", "jobType": 1, "location": "gB",
             "alerts": [{"type": "noteq"}, {"type": 10}, {"type": "5"}],
             "notificationEndpoints": [{"type": 92, "value": "+100"}]}"#,
    )
    .unwrap();
    assert_eq!(monitor.job_type, ClientJobType::Portal);
    assert_eq!(monitor.location, LocationCode::Gb);
    let kinds: Vec<AlertType> = monitor.alerts.unwrap().iter().map(|a| a.kind).collect();
    assert_eq!(kinds, [AlertType::NotEq, AlertType::Removed, AlertType::Gt]);
    let out = serde_json::to_value(AlertType::Increased).unwrap();
    assert_eq!(out, json!("Increased"));
    assert_eq!(
        serde_json::to_value(MessagingServiceType::Sms).unwrap(),
        json!("Sms")
    );
    for (code, kind) in [
        (0, AlertType::Error),
        (7, AlertType::Increased),
        (9, AlertType::Added),
    ] {
        assert_eq!(AlertType::from_code(code), Some(kind));
    }
}

#[test]
fn bad_enumeration_values_name_the_field_and_the_allowed_values() {
    let err = from_json::<Monitor>(br#"{"url": "https://x", "alerts": [{"type": "Sometimes"}]}"#)
        .unwrap_err();
    assert_eq!(err.path, "alerts[0].type");
    assert!(
        err.message
            .starts_with("unknown AlertType \"Sometimes\": expected one of Error (0), NotEq (1)"),
        "{}",
        err.message
    );

    let err = from_json::<Monitor>(br#"{"url": "https://x", "jobType": 2}"#).unwrap_err();
    assert_eq!(err.path, "jobType");
    assert!(
        err.message.contains("unknown ClientJobType 2"),
        "{}",
        err.message
    );

    let err = from_json::<Monitor>(
        br#"{"url": "https://x", "alerts": [{"type": "Eq", "parameters": {"compare": 4}}]}"#,
    )
    .unwrap_err();
    assert_eq!(err.path, "alerts[0].parameters.compare");

    let err =
        from_json::<Monitor>(br#"{"urlFilter": {"include": [{"filter": "a", "type": "Glob"}]}}"#)
            .unwrap_err();
    assert_eq!(err.path, "urlFilter.include[0].type");
    assert!(
        err.message.contains("Contains (0), Regex (1)"),
        "{}",
        err.message
    );

    let err = from_json::<Folder>(br#"{"name": 5}"#).unwrap_err();
    assert_eq!(err.path, "name");
}

#[test]
fn malformed_json_is_an_error_not_a_panic() {
    for body in [
        &b"{"[..],
        b"",
        b"[1,2]",
        b"{\"url\": }",
        b"{\"url\": \"x\"} trailing",
        b"\xff\xfe",
    ] {
        assert!(
            from_json::<Monitor>(body).is_err(),
            "{:?}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn check_data_and_diff_elements_use_the_spec_names() {
    let data: ClientData = from_json(
        br#"{"lastCheckTimestamp": "2026-11-22T10:00:00Z", "raw": "12 EUR", "error": null,
             "diff": [{"operation": 2, "text": "12"}, {"operation": 1, "text": " EUR"}]}"#,
    )
    .unwrap();
    let out = serde_json::to_value(&data).unwrap();
    assert_eq!(out["lastCheckTimestamp"], json!("2026-11-22T10:00:00Z"));
    assert_eq!(out["valueChangedTimestamp"], Value::Null);
    assert_eq!(out["diff"][1], json!({"operation": 1, "text": " EUR"}));
    let err = from_json::<ClientData>(
        br#"{"lastCheckTimestamp": "2026-11-22T10:00:00Z", "diff": [{"operation": 3}]}"#,
    )
    .unwrap_err();
    assert_eq!(err.path, "diff[0].operation");
}

#[test]
fn other_resources_use_the_spec_names() {
    let folder = roundtrip::<Folder>(&json!({"name": "Shops", "parentId": "1"}));
    assert_eq!(
        folder,
        json!({"id": null, "name": "Shops", "parentId": "1", "count": 0, "failedCount": 0, "pausedCount": 0})
    );
    let mv = roundtrip::<MoveRequest>(&json!({"taskIds": ["1"], "folderIds": [], "folderId": "9"}));
    assert_eq!(mv["taskIds"], json!(["1"]));
    let login =
        roundtrip::<ApiLoginRequest>(&json!({"userId": "u", "apiKey": "k", "expiresInSec": 60}));
    assert_eq!(
        login,
        json!({"userId": "u", "apiKey": "k", "expiresInSec": 60})
    );
}
