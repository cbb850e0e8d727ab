//! Diff speed on two ~1 MB values: a page with a few edits (the usual case) and two unrelated
//! texts (the worst case, bounded by the diff's deadline).
//!
//! `cargo bench --bench diff`

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

/// About `bytes` of text: numbered lines of words drawn from a small vocabulary by `seed`.
fn text(bytes: usize, seed: u64) -> String {
    const WORDS: &[&str] = &[
        "price", "stock", "tea", "coffee", "green", "black", "sold", "out", "in", "new", "offer",
        "EUR", "shipping", "free", "today", "limited", "the", "a", "of", "and",
    ];
    let mut state = seed;
    let mut out = String::with_capacity(bytes + 100);
    let mut line = 0;
    while out.len() < bytes {
        line += 1;
        out.push_str(&format!("{line}:"));
        for _ in 0..12 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            out.push(' ');
            out.push_str(WORDS[(state >> 33) as usize % WORDS.len()]);
        }
        out.push('\n');
    }
    out
}

fn bench(c: &mut Criterion) {
    let old = text(1 << 20, 1);
    // A few edits spread over the page: prices changed, a line added, a line removed.
    let mut edited: Vec<String> = old.lines().map(str::to_string).collect();
    for i in (100..edited.len()).step_by(2_000) {
        edited[i] = edited[i].replace("price", "PRICE 12.50");
    }
    edited.insert(5_000, "a brand new line of text".to_string());
    edited.remove(9_000);
    let edited = edited.join("\n");
    let unrelated = text(1 << 20, 2);

    let mut group = c.benchmark_group("diff_1MB");
    group.sample_size(10);
    group.bench_function("few_edits", |b| {
        b.iter(|| black_box(wachet::diff::diff(&old, &edited)))
    });
    group.bench_function("unrelated", |b| {
        b.iter(|| black_box(wachet::diff::diff(&old, &unrelated)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
