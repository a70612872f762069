//! Exact comparison of JSON numbers (bounds are checked exactly, also for
//! integers beyond f64 precision).

use std::cmp::Ordering;

use serde_json::Number;

/// Exact comparison of two JSON numbers (integers compared as integers,
/// an integer against a float by value; NaN cannot occur in JSON).
pub(crate) fn cmp_numbers(a: &Number, b: &Number) -> Ordering {
    match (as_i128(a), as_i128(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(x), None) => cmp_int_float(x, b.as_f64().unwrap_or(f64::NAN)),
        (None, Some(y)) => cmp_int_float(y, a.as_f64().unwrap_or(f64::NAN)).reverse(),
        (None, None) => {
            let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
    }
}

fn as_i128(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Compares an integer with a float exactly.
fn cmp_int_float(x: i128, y: f64) -> Ordering {
    if y.is_nan() {
        return Ordering::Equal;
    }
    // Every i64/u64 lies within ±2^64; floats beyond that are decided by sign.
    const LIMIT: f64 = 18_446_744_073_709_551_616.0; // 2^64
    if y >= LIMIT {
        return Ordering::Less;
    }
    if y <= -LIMIT {
        return Ordering::Greater;
    }
    let floor = y.floor();
    // |floor| < 2^64, so it converts to i128 exactly.
    let fi = floor as i128;
    match x.cmp(&fi) {
        Ordering::Equal if y > floor => Ordering::Less,
        other => other,
    }
}
