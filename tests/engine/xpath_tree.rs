//! Behaviour that the differential suite cannot cover: the tree-model
//! choices (text merging, templates, doctype), resource bounds (deep
//! documents on a 2 MiB stack, nesting and length limits) and the API
//! surface.

use html5ever::{LocalName, QualName, ns};
use scraper::node::{Element, Text};
use scraper::{Html, Node};
use std::time::Instant;
use wachet::extract::xpath::{Value, XNode, XPath, XPathError};

fn eval_str(doc: &Html, expr: &str) -> String {
    XPath::compile(expr)
        .and_then(|x| x.evaluate(doc))
        .map(|v| v.to_xpath_string())
        .unwrap_or_else(|e| format!("ERROR {e}"))
}

fn nodes(doc: &Html, expr: &str) -> Vec<String> {
    match XPath::compile(expr).and_then(|x| x.evaluate(doc)) {
        Ok(Value::Nodes(n)) => n.iter().map(XNode::string_value).collect(),
        other => panic!("{expr}: expected nodes, got {other:?}"),
    }
}

fn element(name: &str) -> Node {
    Node::Element(Element::new(
        QualName::new(None, ns!(html), LocalName::from(name)),
        Vec::new(),
    ))
}

fn text(s: &str) -> Node {
    Node::Text(Text { text: s.into() })
}

/// Runs `f` on a thread with the default 2 MiB stack.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no stack overflow or panic");
}

#[test]
fn adjacent_text_nodes_form_one_xpath_text_node() {
    // html5ever merges text as it appends, but a tree can still hold
    // adjacent or empty text nodes (e.g. built by hand).
    let mut doc = Html::new_document();
    {
        let mut root = doc.tree.root_mut();
        let mut p = root.append(element("p"));
        p.append(text("a"));
        p.append(text(""));
        p.append(text("b"));
        p.append(element("b")).append(text("c"));
        p.append(text(""));
    }
    assert_eq!(nodes(&doc, "//p/text()"), ["ab"]);
    assert_eq!(eval_str(&doc, "count(//p/node())"), "2");
    assert_eq!(nodes(&doc, "//b/preceding-sibling::node()"), ["ab"]);
    assert_eq!(nodes(&doc, "//b/preceding::text()"), ["ab"]);
    assert_eq!(nodes(&doc, "//p/node()[last()]"), ["c"]);
    assert_eq!(eval_str(&doc, "count(//text())"), "2");
    assert_eq!(eval_str(&doc, "string(//p)"), "abc");
}

#[test]
fn template_contents_are_children_of_the_template() {
    let doc = Html::parse_document(
        "<!DOCTYPE html><body><template id=t><p>in</p><!--c--></template><p>out</p></body>",
    );
    assert_eq!(nodes(&doc, "//template/p"), ["in"]);
    assert_eq!(nodes(&doc, "//p"), ["in", "out"]);
    assert_eq!(eval_str(&doc, "name(//p[. = 'in']/..)"), "template");
    assert_eq!(eval_str(&doc, "count(//template/node())"), "2");
    assert_eq!(nodes(&doc, "//comment()/preceding-sibling::*"), ["in"]);
    assert_eq!(nodes(&doc, "//template/following::p"), ["out"]);
    assert_eq!(
        eval_str(&doc, "count(//p[. = 'out']/preceding::node())"),
        "5"
    );
    // The doctype is invisible: the document's only child is <html>.
    assert_eq!(eval_str(&doc, "count(/node())"), "1");
}

#[test]
fn unprefixed_names_match_html_elements_only_as_in_browsers() {
    // document.evaluate in an HTML document: an unprefixed name test selects elements in the
    // HTML namespace (ignoring ASCII case), never SVG or MathML ones; an unprefixed attribute
    // test selects attributes in no namespace.
    let doc = Html::parse_document(
        "<head><title>Page</title></head><body><a href=/x>link</a>\
         <svg viewBox='0 0 1 1'><title>Icon</title><a xlink:href='#a' href='#b'>\
         <rect width='1'/></a></svg><math><mi>x</mi></math></body>",
    );
    assert_eq!(nodes(&doc, "//title"), ["Page"]);
    assert_eq!(nodes(&doc, "//TITLE"), ["Page"]);
    assert_eq!(nodes(&doc, "//a"), ["link"]);
    assert_eq!(nodes(&doc, "//a/@href"), ["/x"]);
    assert_eq!(eval_str(&doc, "count(//svg | //rect | //mi | //math)"), "0");
    // Foreign elements stay reachable by local-name() and name().
    assert_eq!(
        eval_str(&doc, "count(//*[local-name() = 'svg']/*[name() = 'a']/*)"),
        "1"
    );
    assert_eq!(nodes(&doc, "//*[local-name() = 'title']"), ["Page", "Icon"]);
    assert_eq!(eval_str(&doc, "name(//*[local-name() = 'svg'])"), "svg");
    assert_eq!(
        eval_str(&doc, "namespace-uri(//*[local-name() = 'rect'])"),
        "http://www.w3.org/2000/svg"
    );
    assert_eq!(
        eval_str(&doc, "namespace-uri(//*[local-name() = 'mi'])"),
        "http://www.w3.org/1998/Math/MathML"
    );
    assert_eq!(eval_str(&doc, "namespace-uri(//body)"), "");
    // On the SVG <a>: @href is the plain attribute, not xlink:href; both are in @*.
    let svg_a = "//*[local-name() = 'svg']/*[local-name() = 'a']";
    assert_eq!(nodes(&doc, &format!("{svg_a}/@href")), ["#b"]);
    assert_eq!(eval_str(&doc, &format!("count({svg_a}/@*)")), "2");
    assert_eq!(
        eval_str(&doc, &format!("name({svg_a}/@*[. = '#a'])")),
        "xlink:href"
    );
    assert_eq!(
        eval_str(&doc, &format!("local-name({svg_a}/@*[. = '#a'])")),
        "href"
    );
    // Attribute names of foreign elements are exact (SVG keeps viewBox's case).
    assert_eq!(
        eval_str(&doc, "//*[local-name() = 'svg']/@viewBox"),
        "0 0 1 1"
    );
    assert_eq!(
        eval_str(&doc, "count(//*[local-name() = 'svg']/@viewbox)"),
        "0"
    );
}

#[test]
fn attributes_and_values() {
    let doc = Html::parse_document("<p id=x class='a b' data-n=' 7 '>t</p>");
    let v = XPath::compile("//p/@*").and_then(|x| x.evaluate(&doc));
    let Ok(Value::Nodes(attrs)) = v else {
        panic!("{v:?}")
    };
    // scraper keeps attributes sorted by name; that is their document order.
    let values: Vec<String> = attrs.iter().map(XNode::string_value).collect();
    assert_eq!(values, ["a b", " 7 ", "x"]);
    assert!(matches!(attrs[0], XNode::Attribute { index: 0, .. }));
    assert_eq!(eval_str(&doc, "//p/@data-n * 2"), "14");
    assert_eq!(eval_str(&doc, "id('x')/@class"), "a b");
}

#[test]
fn number_formatting() {
    for (expr, want) in [
        ("3", "3"),
        ("3.0", "3"),
        ("-0", "0"),
        ("0.5", "0.5"),
        ("1 div 0", "Infinity"),
        ("-1 div 0", "-Infinity"),
        ("0 div 0", "NaN"),
        ("100000000000000000000", "100000000000000000000"),
        ("0.000001", "0.000001"),
        ("round(-0.5)", "0"),
        ("1 div -(1 div 0)", "0"),
    ] {
        let doc = Html::new_document();
        assert_eq!(eval_str(&doc, expr), want, "{expr}");
    }
    assert_eq!(
        Value::Number(1e21).to_xpath_string(),
        "1000000000000000000000"
    );
    assert_eq!(Value::Boolean(true).to_xpath_string(), "true");
    assert_eq!(Value::Nodes(Vec::new()).to_xpath_string(), "");
}

#[test]
fn errors_and_limits() {
    let err = |e: &str| XPath::compile(e).err();
    assert_eq!(
        err("contains('a')"),
        Some(XPathError {
            message: "function contains expects 2 arguments".into(),
            position: 0
        })
    );
    assert_eq!(
        err("//svg:rect").map(|e| e.to_string()),
        Some("namespace prefixes are not supported at position 2".into())
    );
    assert_eq!(
        err("$x").map(|e| e.message),
        Some("variables are not supported".into())
    );
    assert!(err("nope()").is_some_and(|e| e.message.contains("nope")));
    // Character, not byte, offsets.
    assert_eq!(err("'é' = $v").map(|e| e.position), Some(6));
    // Length bound.
    let long = format!("1{}", " + 1".repeat(2_600));
    assert!(err(&long).is_some_and(|e| e.message.contains("longer than")));
    // A long flat chain is fine (n-ary, no deep recursion).
    let chain = format!("1{}", "+1".repeat(4_000));
    let doc = Html::new_document();
    assert_eq!(eval_str(&doc, &chain), "4001");
    // Nesting bound.
    let nested = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
    assert!(err(&nested(129)).is_some_and(|e| e.message.contains("nested")));
    assert!(err(&nested(127)).is_none());
}

#[test]
fn deep_expressions_on_small_stack() {
    on_small_stack(|| {
        let doc = Html::parse_document("<div><div>x</div></div>");
        // Just under the nesting bound, for each kind of nesting.
        let parens = format!("{}1{}", "(".repeat(127), ")".repeat(127));
        assert_eq!(eval_str(&doc, &parens), "1");
        let preds = format!("count(//*{})", "[*".repeat(126) + &"]".repeat(126));
        assert_eq!(eval_str(&doc, &preds), "0");
        let calls = format!("{}1{}", "string(".repeat(127), ")".repeat(127));
        assert_eq!(eval_str(&doc, &calls), "1");
        let mixed = format!("count(//div{}/x{})", "[(div".repeat(63), ")]".repeat(63));
        assert_eq!(eval_str(&doc, &mixed), "0");
        // Past the bound: a clean error, not a stack overflow.
        let too_deep = format!("{}1{}", "(".repeat(5_000), ")".repeat(5_000));
        assert!(XPath::compile(&too_deep).is_err());
    });
}

fn deep_tree(depth: usize) -> Html {
    let mut doc = Html::new_document();
    let mut id = doc.tree.root().id();
    for _ in 0..depth {
        let Some(mut n) = doc.tree.get_mut(id) else {
            unreachable!()
        };
        id = n.append(element("div")).id();
    }
    if let Some(mut n) = doc.tree.get_mut(id) {
        n.append(text("x"));
    }
    doc
}

fn check_deep(doc: &Html, divs: usize) {
    let n = divs.to_string();
    assert_eq!(eval_str(doc, "count(//div)"), n);
    assert_eq!(eval_str(doc, "count(//div[last()])"), n);
    assert_eq!(eval_str(doc, "string(//div[1])"), "x");
    assert_eq!(eval_str(doc, "string-length(string(/))"), "1");
    assert_eq!(eval_str(doc, "count(//text()/ancestor::div)"), n);
    assert_eq!(
        eval_str(doc, "count(//div/ancestor::div)"),
        (divs - 1).to_string()
    );
    assert_eq!(eval_str(doc, "count(//div/..)"), n);
    assert_eq!(
        eval_str(doc, "count(//div | //text())"),
        (divs + 1).to_string()
    );
    assert_eq!(
        eval_str(doc, "count(//div[not(div)]/preceding::node())"),
        "0"
    );
    assert_eq!(eval_str(doc, "count((//div)[1]/following::node())"), "0");
    assert_eq!(
        eval_str(doc, "count(//text()/ancestor-or-self::node())"),
        (divs + 1 + (doc.tree.root().first_child().map_or(0, |_| 1))).to_string()
    );
    assert_eq!(eval_str(doc, "(//div)[last()]"), "x");
}

#[test]
fn hundred_thousand_deep_document_on_small_stack() {
    on_small_stack(|| {
        let start = Instant::now();
        let doc = deep_tree(100_000);
        println!("built 100k-deep tree in {:?}", start.elapsed());
        let start = Instant::now();
        check_deep(&doc, 100_000);
        println!("evaluated deep checks in {:?}", start.elapsed());
    });
}

#[test]
fn parsed_deep_document_on_small_stack() {
    // html5ever's tree builder is quadratic in nesting depth (scope checks
    // walk the open-element stack), so the parsed case stays at 5,000.
    on_small_stack(|| {
        let depth = 5_000;
        let src = format!("{}x{}", "<div>".repeat(depth), "</div>".repeat(depth));
        let start = Instant::now();
        let doc = Html::parse_document(&src);
        println!("parsed {depth}-deep document in {:?}", start.elapsed());
        assert_eq!(eval_str(&doc, "count(//div)"), depth.to_string());
        assert_eq!(eval_str(&doc, "string(//div[1])"), "x");
        assert_eq!(eval_str(&doc, "count(//div[last()])"), depth.to_string());
        assert_eq!(eval_str(&doc, "name(//text()/ancestor::*[last()])"), "html");
    });
}

#[test]
fn api_traits() {
    fn assert_traits<T: Clone + std::fmt::Debug + Send + Sync>() {}
    assert_traits::<XPath>();
    assert_traits::<XPathError>();
    let x = XPath::compile("//p").expect("compiles");
    let y = x.clone();
    assert!(format!("{y:?}").contains("//p"));
    let doc = Html::parse_document("<p>a</p><p>b</p>");
    let v = y.evaluate(&doc).expect("evaluates");
    assert_eq!(v.to_xpath_string(), "a");
}
