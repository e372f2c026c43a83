//! Kubernetes resource quantities (`1`, `500m`, `2Gi`, `1e3`, `0.5`).
//!
//! The grammar is Kubernetes' `resource.Quantity`: a signed decimal number
//! followed by a binary suffix (`Ki` .. `Ei`), a decimal suffix (`n`, `u`, `m`,
//! `k`, `M` .. `E`) or a decimal exponent (`e3`, `E-2`). Values are kept exact
//! (mantissa and exponents) so rounding happens once, where a rule asks for it.

use std::fmt;

/// A parsed quantity: `(-1)^negative * mantissa * 10^exp10 * 2^exp2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    mantissa: u128,
    exp10: i32,
    exp2: u32,
}

/// Why a quantity string was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuantityError(String);

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a valid quantity (expected a number with an optional suffix, like `2`, `500m` or `4Gi`)", self.0)
    }
}

impl std::error::Error for QuantityError {}

/// More significant digits than any real quantity has; keeps `mantissa` in range.
const MAX_DIGITS: usize = 36;

impl Quantity {
    /// Parses a quantity string.
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        let err = || QuantityError(text.to_string());
        let s = text.trim();
        let (negative, s) = match s.as_bytes().first() {
            Some(b'-') => (true, s.get(1..).unwrap_or_default()),
            Some(b'+') => (false, s.get(1..).unwrap_or_default()),
            _ => (false, s),
        };
        let number_end = s.bytes().position(|b| !(b.is_ascii_digit() || b == b'.')).unwrap_or(s.len());
        let (number, suffix) = s.split_at(number_end);
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(err());
        }
        if frac_part.contains('.') {
            return Err(err());
        }
        let digits = int_part.bytes().chain(frac_part.bytes());
        let mut mantissa: u128 = 0;
        let mut significant = 0usize;
        let mut dropped = 0i32; // integer digits beyond MAX_DIGITS, as a power of ten
        let mut frac_digits = 0i32;
        for (i, b) in digits.enumerate() {
            let in_fraction = i >= int_part.len();
            if significant >= MAX_DIGITS {
                if !in_fraction {
                    dropped += 1;
                }
                continue;
            }
            mantissa = mantissa * 10 + u128::from(b - b'0');
            if mantissa > 0 {
                significant += 1;
            }
            if in_fraction {
                frac_digits += 1;
            }
        }
        let (exp10, exp2) = match suffix {
            "" => (0, 0),
            "n" => (-9, 0),
            "u" => (-6, 0),
            "m" => (-3, 0),
            "k" => (3, 0),
            "M" => (6, 0),
            "G" => (9, 0),
            "T" => (12, 0),
            "P" => (15, 0),
            "E" => (18, 0),
            "Ki" => (0, 10),
            "Mi" => (0, 20),
            "Gi" => (0, 30),
            "Ti" => (0, 40),
            "Pi" => (0, 50),
            "Ei" => (0, 60),
            exp => {
                let rest = exp.strip_prefix('e').or_else(|| exp.strip_prefix('E')).ok_or_else(err)?;
                let unsigned = rest.strip_prefix(['+', '-']).unwrap_or(rest);
                if unsigned.is_empty() || !unsigned.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err());
                }
                let e: i32 = rest.parse().map_err(|_| err())?;
                if e.abs() > 1000 {
                    return Err(err());
                }
                (e, 0)
            }
        };
        Ok(Quantity { negative: negative && mantissa != 0, mantissa, exp10: exp10 - frac_digits + dropped, exp2 })
    }

    /// The value in one spelling, whatever its notation: `1.50`, `1.5` and
    /// `15e-1` give the same text.
    pub fn canonical(&self) -> String {
        let (mut m, mut e) = (self.mantissa, self.exp10);
        while m != 0 && m.is_multiple_of(10) {
            m /= 10;
            e += 1;
        }
        if m == 0 {
            return "0".into();
        }
        format!("{}{m}e{e}*2^{}", if self.negative { "-" } else { "" }, self.exp2)
    }

    /// Whether the quantity is exactly zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// Whether the quantity is above zero.
    pub fn is_positive(&self) -> bool {
        !self.negative && self.mantissa != 0
    }

    /// The quantity in whole units, rounded up (Kubernetes' `Value()`), and
    /// saturating at `u64::MAX`; negative quantities give 0.
    pub fn ceil_units(&self) -> u64 {
        self.ceil_scaled(0)
    }

    /// The quantity in thousandths, rounded up (Kubernetes' `MilliValue()`),
    /// saturating; negative quantities give 0.
    pub fn ceil_millis(&self) -> u64 {
        self.ceil_scaled(3)
    }

    fn ceil_scaled(&self, extra10: i32) -> u64 {
        if !self.is_positive() {
            return 0;
        }
        let mut value = self.mantissa;
        // Multiply by 2^exp2 first: it only grows the value.
        for _ in 0..self.exp2 {
            value = match value.checked_mul(2) {
                Some(v) => v,
                None => return u64::MAX,
            };
        }
        let exp = self.exp10 + extra10;
        if exp >= 0 {
            for _ in 0..exp {
                value = match value.checked_mul(10) {
                    Some(v) => v,
                    None => return u64::MAX,
                };
            }
        } else {
            for _ in 0..(-exp) {
                if value == 0 {
                    break;
                }
                // Ceiling division keeps any remainder as one more unit.
                value = value.div_ceil(10);
            }
        }
        u64::try_from(value).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &str) -> u64 {
        Quantity::parse(s).unwrap().ceil_units()
    }
    fn millis(s: &str) -> u64 {
        Quantity::parse(s).unwrap().ceil_millis()
    }

    #[test]
    fn plain_integers_and_decimals() {
        assert_eq!(units("4"), 4);
        assert_eq!(units("+4"), 4);
        assert_eq!(units("0"), 0);
        assert_eq!(units("0.5"), 1, "rounds up like Quantity.Value()");
        assert_eq!(units(".5"), 1);
        assert_eq!(units("5."), 5);
        assert_eq!(millis("0.5"), 500);
        assert_eq!(millis("1.0001"), 1001, "rounds up like MilliValue()");
    }

    #[test]
    fn suffixes() {
        assert_eq!(millis("500m"), 500);
        assert_eq!(units("500m"), 1);
        assert_eq!(units("2k"), 2000);
        assert_eq!(units("1Ki"), 1024);
        assert_eq!(units("4Gi"), 4 << 30);
        assert_eq!(units("1Ei"), 1 << 60);
        assert_eq!(units("3M"), 3_000_000);
        assert_eq!(millis("100n"), 1);
        assert_eq!(units("1e3"), 1000);
        assert_eq!(units("1E-2"), 1);
        assert_eq!(millis("25e-3"), 25);
    }

    #[test]
    fn zero_and_sign() {
        assert!(Quantity::parse("0").unwrap().is_zero());
        assert!(Quantity::parse("0Gi").unwrap().is_zero());
        assert!(!Quantity::parse("0.000").unwrap().is_positive());
        assert!(!Quantity::parse("-1").unwrap().is_positive());
        assert_eq!(units("-1"), 0);
        assert!(Quantity::parse("-0").unwrap().is_zero());
    }

    #[test]
    fn huge_values_saturate_instead_of_overflowing() {
        assert_eq!(units("999999999999999999999999999999E"), u64::MAX);
        assert_eq!(units("1e999"), u64::MAX);
        assert_eq!(units(&"9".repeat(200)), u64::MAX);
        assert_eq!(units(&format!("0.{}1", "0".repeat(200))), 1);
    }

    #[test]
    fn garbage_is_refused() {
        for bad in ["", "-", "abc", "1.2.3", "1Gb", "1e", "1e+", "e3", "1 Gi", "1ee3", "1e5000", "."] {
            let e = Quantity::parse(bad).unwrap_err();
            assert!(e.to_string().contains("is not a valid quantity"), "{bad}: {e}");
        }
    }
}
