//! Numbers and indices as Python prints them, so that messages read as
//! `assert_close`'s do.

/// A float as Python's `repr` writes it (`1e-05`, `0.5`, `3.0`, `nan`, `-inf`).
pub fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Both languages print the shortest digits that round-trip; they differ in layout.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always writes an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` writes an integer exponent");
    if (-4..16).contains(&exponent) {
        let fixed = value.to_string();
        if fixed.contains('.') {
            fixed
        } else {
            fixed + ".0"
        }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    }
}

/// An index as Python prints a tuple: `()`, `(3,)`, `(0, 1)`.
pub fn tuple_repr<T: std::fmt::Display>(index: &[T]) -> String {
    match index {
        [single] => format!("({single},)"),
        _ => {
            let items: Vec<String> = index.iter().map(T::to_string).collect();
            format!("({})", items.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_python_repr() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (3.0, "3.0"),
            (1e-5, "1e-05"),
            (1.3e-6, "1.3e-06"),
            (0.0001, "0.0001"),
            (0.0009999871253967285, "0.0009999871253967285"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (-2.5e20, "-2.5e+20"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, repr) in cases {
            assert_eq!(float_repr(value), repr);
        }
    }

    #[test]
    fn indices_print_as_python_tuples() {
        assert_eq!(tuple_repr::<usize>(&[]), "()");
        assert_eq!(tuple_repr(&[4]), "(4,)");
        assert_eq!(tuple_repr(&[0, 1, 2]), "(0, 1, 2)");
        assert_eq!(tuple_repr(&[-1i64, 7]), "(-1, 7)");
    }
}
