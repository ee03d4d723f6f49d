//! Numbers as the reports and the generator's tables print them.

/// `n` with its thousands separated by commas: `412`, `58,026`, `1,000,000`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_separated_by_commas() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(412), "412");
        assert_eq!(grouped(58_026), "58,026");
        assert_eq!(grouped(1_000_000), "1,000,000");
    }
}
