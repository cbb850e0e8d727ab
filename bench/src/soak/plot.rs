//! The soak's PNG: one panel a figure over the run's minutes, the kill marked in red. plotters
//! draws text only through a font backend (FreeType and system fonts, or a TrueType file), so
//! its labels are drawn here with a 3x5 pixel font of capitals, digits and a few signs, and the
//! image needs no font on the machine.

use plotters::prelude::*;
use std::path::Path;

/// One panel: a title and one or two lines of (minute, value).
pub(crate) struct Panel {
    pub(crate) title: String,
    pub(crate) lines: Vec<Vec<(f64, f64)>>,
}

const WIDTH: u32 = 1200;
const HEIGHT: u32 = 900;
/// Pixels a font pixel takes.
const SCALE: i32 = 2;
const COLORS: [RGBColor; 2] = [RGBColor(31, 90, 170), RGBColor(220, 120, 0)];

/// Rows of a glyph, top first, three bits each (4 is the left column).
fn glyph(c: char) -> [u8; 5] {
    match c.to_ascii_uppercase() {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 2, 2, 2],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        'A' => [2, 5, 7, 5, 5],
        'B' => [6, 5, 6, 5, 6],
        'C' => [3, 4, 4, 4, 3],
        'D' => [6, 5, 5, 5, 6],
        'E' => [7, 4, 6, 4, 7],
        'F' => [7, 4, 6, 4, 4],
        'G' => [3, 4, 5, 5, 3],
        'H' => [5, 5, 7, 5, 5],
        'I' => [7, 2, 2, 2, 7],
        'J' => [1, 1, 1, 5, 2],
        'K' => [5, 5, 6, 5, 5],
        'L' => [4, 4, 4, 4, 7],
        'M' => [5, 7, 7, 5, 5],
        'N' => [6, 5, 5, 5, 5],
        'O' => [2, 5, 5, 5, 2],
        'P' => [6, 5, 6, 4, 4],
        'Q' => [2, 5, 5, 6, 3],
        'R' => [6, 5, 6, 5, 5],
        'S' => [3, 4, 2, 1, 6],
        'T' => [7, 2, 2, 2, 2],
        'U' => [5, 5, 5, 5, 7],
        'V' => [5, 5, 5, 5, 2],
        'W' => [5, 5, 7, 7, 5],
        'X' => [5, 5, 2, 5, 5],
        'Y' => [5, 5, 2, 2, 2],
        'Z' => [7, 1, 2, 4, 7],
        '.' => [0, 0, 0, 0, 2],
        ',' => [0, 0, 0, 2, 4],
        '/' => [1, 1, 2, 4, 4],
        '-' => [0, 0, 7, 0, 0],
        '(' => [2, 4, 4, 4, 2],
        ')' => [2, 1, 1, 1, 2],
        '%' => [5, 1, 2, 4, 5],
        ':' => [0, 2, 0, 2, 0],
        '=' => [0, 7, 0, 7, 0],
        '+' => [0, 2, 7, 2, 0],
        _ => [0; 5],
    }
}

/// Draws `text` with its top left corner at `at`.
fn text<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    at: (i32, i32),
    text: &str,
    color: &RGBColor,
) -> Result<(), String> {
    for (i, c) in text.chars().enumerate() {
        let x0 = at.0 + i as i32 * 4 * SCALE;
        for (row, bits) in glyph(c).iter().enumerate() {
            for col in 0..3 {
                if bits & (4 >> col) != 0 {
                    let x = x0 + col * SCALE;
                    let y = at.1 + row as i32 * SCALE;
                    area.draw(&Rectangle::new(
                        [(x, y), (x + SCALE - 1, y + SCALE - 1)],
                        color.filled(),
                    ))
                    .map_err(|e| e.to_string())?;
                }
            }
        }
    }
    Ok(())
}

/// A round number at or above `x`, so the axis ends on a readable value.
fn ceiling(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&c| c >= x)
        .unwrap_or(10.0 * magnitude)
}

fn label(v: f64) -> String {
    if v >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Writes `panels` (three rows of two) over `minutes` to `path`, with a red line at `kill`.
pub(crate) fn draw(
    path: &Path,
    heading: &str,
    panels: &[Panel],
    minutes: f64,
    kill: f64,
) -> Result<(), String> {
    let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    text(&root, (10, 8), heading, &BLACK)?;
    let body = root.margin(26, 0, 0, 0);
    let cells = body.split_evenly((3, 2));
    for (panel, cell) in panels.iter().zip(cells.iter()) {
        let top = panel
            .lines
            .iter()
            .flatten()
            .map(|p| p.1)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        let top = ceiling(top * 1.05);
        let mut chart = ChartBuilder::on(cell)
            .margin_top(26)
            .margin_left(60)
            .margin_right(16)
            .margin_bottom(22)
            .build_cartesian_2d(0.0..minutes, 0.0..top)
            .map_err(|e| e.to_string())?;
        let grey = RGBColor(220, 220, 220);
        for i in 0..=4 {
            let y = top * f64::from(i) / 4.0;
            chart
                .draw_series(LineSeries::new([(0.0, y), (minutes, y)], grey))
                .map_err(|e| e.to_string())?;
            let (px, py) = chart.backend_coord(&(0.0, y));
            let l = label(y);
            text(&root, (px - 6 - l.len() as i32 * 8, py - 5), &l, &BLACK)?;
        }
        let mut m = 0.0;
        while m <= minutes {
            let (px, py) = chart.backend_coord(&(m, 0.0));
            let l = label(m);
            text(&root, (px - l.len() as i32 * 4, py + 6), &l, &BLACK)?;
            m += if minutes > 30.0 { 10.0 } else { 1.0 };
        }
        chart
            .draw_series(LineSeries::new(
                [(kill, 0.0), (kill, top)],
                RGBColor(200, 30, 30),
            ))
            .map_err(|e| e.to_string())?;
        for (i, line) in panel.lines.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let points: Vec<(f64, f64)> =
                line.iter().copied().filter(|p| p.1.is_finite()).collect();
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| e.to_string())?;
        }
        let (px, py) = chart.backend_coord(&(0.0, top));
        text(&root, (px, py - 20), &panel.title, &BLACK)?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::ceiling;

    #[test]
    fn axes_end_on_round_numbers() {
        assert_eq!(ceiling(87.0), 100.0);
        assert_eq!(ceiling(101.0), 200.0);
        assert_eq!(ceiling(0.3), 0.5);
        assert_eq!(ceiling(0.0), 1.0);
    }
}
