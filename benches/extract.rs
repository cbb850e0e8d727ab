//! Extraction speed: parse + XPath + rendered text on a generated ~1 MB page and a ~100 KB page,
//! next to scraper's bare `Html::parse_document` on the same pages in the same run.
//!
//! `cargo bench --bench extract`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use wachet::extract::Extractor;
use wachet::extract::xpath::XPath;

/// A shop-like page of `items` product blocks (about 500 bytes each).
fn page(items: usize) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><title>Shop</title><style>.x{color:red}</style>\
         <script>var tracking = {id: 1};</script></head><body><header><nav><ul>\
         <li><a href=/>Home</a></li><li><a href=/sale>Sale</a></li></ul></nav></header><main>",
    );
    for i in 0..items {
        html.push_str(&format!(
            "<div class=\"item\" id=\"p{i}\"><h2>Product number {i}</h2>\
             <p>A fine product, described at some length so that the text is realistic; \
             it has <b>bold</b> words and <a href=\"/p/{i}\">a link</a>.</p>\
             <table><tr><th>Price</th><td><span class=\"price\">{}.{:02} EUR</span></td></tr>\
             <tr><th>Stock</th><td>{}</td></tr></table></div>\n",
            i % 97 + 1,
            i % 100,
            if i % 3 == 0 { "sold out" } else { "in stock" },
        ));
    }
    html.push_str("</main><footer><p>Imprint</p></footer></body></html>");
    html
}

fn bench(c: &mut Criterion) {
    let pages = [("100KB", page(200)), ("1MB", page(2000))];
    let xpath = XPath::compile("//div[@class='item']//span[@class='price']").ok();
    let with_xpath = Extractor::new(xpath, None, None);
    let body_text = Extractor::default();

    let mut group = c.benchmark_group("extract");
    for (name, html) in &pages {
        group.throughput(Throughput::Bytes(html.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("scraper_parse_only", name),
            html,
            |b, html| b.iter(|| black_box(scraper::Html::parse_document(html))),
        );
        group.bench_with_input(BenchmarkId::new("wachet_xpath", name), html, |b, html| {
            b.iter(|| black_box(with_xpath.extract(html)))
        });
        group.bench_with_input(
            BenchmarkId::new("wachet_body_text", name),
            html,
            |b, html| b.iter(|| black_box(body_text.extract(html))),
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
