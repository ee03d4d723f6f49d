//! HTTP/3's bytes, written by hand so a case can write what no well-behaved client would: QUIC
//! variable-length integers (RFC 9000 §16), frames (RFC 9114 §7.1), field sections encoded with
//! QPACK's literal representations only (RFC 9204 §4.5.6: no table, so the server needs none),
//! and the one field an answer is read for, its `:status` (static-table references or a literal,
//! Huffman-coded or not: RFC 9204 §4.5.2–§4.5.4, Appendix A; RFC 7541 Appendix B for the digits).

/// Frame types (RFC 9114 §7.2).
pub(crate) const DATA: u64 = 0x00;
pub(crate) const HEADERS: u64 = 0x01;
pub(crate) const CANCEL_PUSH: u64 = 0x03;
pub(crate) const SETTINGS: u64 = 0x04;
pub(crate) const PUSH_PROMISE: u64 = 0x05;
pub(crate) const GOAWAY: u64 = 0x07;
pub(crate) const MAX_PUSH_ID: u64 = 0x0d;
/// A reserved frame type (`0x1f * N + 0x21`, §7.2.8): to be ignored.
pub(crate) const RESERVED_FRAME: u64 = 0x1f * 3 + 0x21;

/// Unidirectional stream types (RFC 9114 §6.2).
pub(crate) const CONTROL_STREAM: u64 = 0x00;
pub(crate) const PUSH_STREAM: u64 = 0x01;
/// A reserved stream type (`0x1f * N + 0x21`, §6.2.3): to be ignored.
pub(crate) const RESERVED_STREAM: u64 = 0x1f * 5 + 0x21;

/// A QUIC variable-length integer.
pub(crate) fn varint(v: u64, out: &mut Vec<u8>) {
    match v {
        0..=63 => out.push(v as u8),
        64..=16_383 => out.extend_from_slice(&(0x4000 | v as u16).to_be_bytes()),
        16_384..=1_073_741_823 => out.extend_from_slice(&(0x8000_0000 | v as u32).to_be_bytes()),
        _ => out.extend_from_slice(&(0xc000_0000_0000_0000 | v).to_be_bytes()),
    }
}

/// Reads a variable-length integer at `at`, moving past it.
pub(crate) fn read_varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let first = *bytes.get(*at)?;
    let len = 1usize << (first >> 6);
    let raw = bytes.get(*at..*at + len)?;
    let mut v = u64::from(first & 0x3f);
    for b in &raw[1..] {
        v = (v << 8) | u64::from(*b);
    }
    *at += len;
    Some(v)
}

/// A frame: its type, its length, its payload.
pub(crate) fn frame(kind: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 16);
    varint(kind, &mut out);
    varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

/// A SETTINGS payload of `(identifier, value)` pairs.
pub(crate) fn settings(pairs: &[(u64, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (id, value) in pairs {
        varint(*id, &mut out);
        varint(*value, &mut out);
    }
    out
}

/// A QPACK prefixed integer: `first`'s high bits kept, the value in its low `bits` bits and on.
fn prefixed(first: u8, bits: u8, v: usize, out: &mut Vec<u8>) {
    let max = (1usize << bits) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    let mut rest = v - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// A field section of `fields`, each a literal with a literal name, never Huffman-coded
/// (RFC 9204 §4.5.6), after the prefix of a section that references no table (§4.5.1).
pub(crate) fn field_section(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = vec![0x00, 0x00];
    for (name, value) in fields {
        prefixed(0x20, 3, name.len(), &mut out);
        out.extend_from_slice(name.as_bytes());
        prefixed(0x00, 7, value.len(), &mut out);
        out.extend_from_slice(value.as_bytes());
    }
    out
}

/// Reads a QPACK prefixed integer of `bits` bits at `at`.
fn read_prefixed(bytes: &[u8], bits: u8, at: &mut usize) -> Option<usize> {
    let max = (1usize << bits) - 1;
    let mut v = usize::from(*bytes.get(*at)?) & max;
    *at += 1;
    if v < max {
        return Some(v);
    }
    let mut shift = 0;
    loop {
        let b = *bytes.get(*at)?;
        *at += 1;
        v += usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 28 {
            return None;
        }
    }
}

/// The `:status` values of QPACK's static table, by index (RFC 9204 Appendix A).
const STATIC_STATUS: &[(usize, u16)] = &[
    (24, 103),
    (25, 200),
    (26, 304),
    (27, 404),
    (28, 503),
    (63, 100),
    (64, 204),
    (65, 206),
    (66, 302),
    (67, 400),
    (68, 403),
    (69, 421),
    (70, 425),
    (71, 500),
];

/// The `:status` of a HEADERS frame's field section, if it is the first field line (as RFC 9114
/// §4.3 puts pseudo-header fields first) and readable without a dynamic table.
pub(crate) fn status(section: &[u8]) -> Option<u16> {
    let mut at = 0;
    // The prefix: Required Insert Count 0 (no dynamic table), then the base.
    if read_prefixed(section, 8, &mut at)? != 0 {
        return None;
    }
    read_prefixed(section, 7, &mut at)?;
    let first = *section.get(at)?;
    if first & 0xc0 == 0xc0 {
        // Indexed field line, static table.
        let index = read_prefixed(section, 6, &mut at)?;
        return STATIC_STATUS
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, s)| *s);
    }
    if first & 0xf0 == 0x50 {
        // Literal with a static name reference: the name must be one of the `:status` rows.
        let index = read_prefixed(section, 4, &mut at)?;
        STATIC_STATUS.iter().find(|(i, _)| *i == index)?;
    } else if first & 0xe0 == 0x20 {
        // Literal with a literal name.
        let huffman = first & 0x08 != 0;
        let len = read_prefixed(section, 3, &mut at)?;
        let name = section.get(at..at + len)?;
        at += len;
        if huffman || name != b":status" {
            return None;
        }
    } else {
        return None;
    }
    let huffman = *section.get(at)? & 0x80 != 0;
    let len = read_prefixed(section, 7, &mut at)?;
    let value = section.get(at..at + len)?;
    let digits = if huffman {
        huffman_digits(value)?
    } else {
        value.to_vec()
    };
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// Decodes a Huffman-coded string of decimal digits (RFC 7541 Appendix B: `0`–`2` are five
/// bits, `00000`–`00010`; `3`–`9` six, `011001`–`011111`); None for anything else.
fn huffman_digits(coded: &[u8]) -> Option<Vec<u8>> {
    let bits: Vec<u8> = coded
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
        .collect();
    let take = |from: usize, n: usize| bits[from..from + n].iter().fold(0u8, |v, b| (v << 1) | b);
    let (mut out, mut at) = (Vec::new(), 0);
    while bits.len() - at >= 5 {
        let five = take(at, 5);
        if five <= 2 {
            out.push(b'0' + five);
            at += 5;
        } else if bits.len() - at >= 6 && (0x19..=0x1f).contains(&take(at, 6)) {
            out.push(b'0' + take(at, 6) - 0x16);
            at += 6;
        } else {
            break;
        }
    }
    // What is left is the padding: the most significant bits of EOS, all ones (§5.2).
    bits[at..].iter().all(|b| *b == 1).then_some(out)
}

/// The frames in `bytes`, as far as they are whole: `(type, payload)`.
pub(crate) fn frames(bytes: &[u8]) -> Vec<(u64, &[u8])> {
    let (mut out, mut at) = (Vec::new(), 0);
    while at < bytes.len() {
        let (Some(kind), Some(len)) = (read_varint(bytes, &mut at), read_varint(bytes, &mut at))
        else {
            break;
        };
        let Some(payload) = bytes.get(at..at + len as usize) else {
            break;
        };
        at += len as usize;
        out.push((kind, payload));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_length() {
        for v in [0, 63, 64, 16_383, 16_384, 1_073_741_823, 1_073_741_824] {
            let mut out = Vec::new();
            varint(v, &mut out);
            let mut at = 0;
            assert_eq!(read_varint(&out, &mut at), Some(v));
            assert_eq!(at, out.len());
        }
        // RFC 9000 §A.1's examples.
        let mut at = 0;
        assert_eq!(read_varint(&[0x7b, 0xbd], &mut at), Some(15_293));
    }

    #[test]
    fn a_status_is_read_from_each_representation_a_server_may_use() {
        assert_eq!(status(&[0, 0, 0xc0 | 25]), Some(200), "static indexed");
        assert_eq!(
            status(&[0, 0, 0xc0 | 0x3f, 71 - 63]),
            Some(500),
            "a long index"
        );
        // Literal with the name of static 24 (`:status 103`), the value "405" as text.
        assert_eq!(
            status(&[0, 0, 0x50 | 0x0f, 24 - 15, 3, b'4', b'0', b'5']),
            Some(405)
        );
        // "405" Huffman-coded: 011010 00000 011011, padded with ones.
        let coded = [0b0110_1000, 0b0000_1101, 0b1111_1111];
        assert_eq!(
            status(&[0, 0, 0x5f, 9, 0x80 | 3, coded[0], coded[1], coded[2]]),
            Some(405)
        );
        let literal = field_section(&[(":status", "201")]);
        assert_eq!(status(&literal), Some(201), "literal name and value");
        assert_eq!(
            status(&[1, 0, 0xc0 | 25]),
            None,
            "a dynamic table is not read"
        );
    }

    #[test]
    fn frames_are_split_as_written() {
        let mut bytes = frame(HEADERS, &[1, 2, 3]);
        bytes.extend(frame(DATA, b"hello"));
        bytes.extend(frame(RESERVED_FRAME, &[]));
        let got = frames(&bytes);
        assert_eq!(
            got,
            vec![
                (HEADERS, &[1u8, 2, 3][..]),
                (DATA, &b"hello"[..]),
                (RESERVED_FRAME, &[][..])
            ]
        );
    }
}
