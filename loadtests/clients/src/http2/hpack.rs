//! HPACK decoding (RFC 7541) of the server's header blocks, by hand: integers, strings (raw or
//! Huffman-coded), the static table ([`frame::STATIC`]) and the connection's dynamic table, with
//! the table's size updates up to what the client allows. The generator reads one header of an
//! answer, `:status`, but every block goes through the decoder in order to keep the table right.
//!
//! Why not a crate: `loona-hpack` (the maintained fork of `hpack`) builds a `HashMap` of the
//! whole Huffman code for every Huffman-coded string it decodes; under callgrind that was two
//! thirds of the generator's instructions on `h2c` (hyper's server Huffman-codes its literals).
//! `httlib-hpack` copies every field into new vectors and drains its input as it goes. This one
//! allocates only for the dynamic table's entries, which a steady run rarely adds (an answer's
//! fields are indexed once and referred to after), and decodes Huffman strings with a binary
//! tree built once per process. Its results are checked against `loona-hpack` in the tests.

use std::collections::VecDeque;
use std::sync::OnceLock;

use super::frame::STATIC;

/// A dynamic table entry: a name and a value.
type Entry = (Box<[u8]>, Box<[u8]>);

/// A header block the decoder cannot read: a connection error (COMPRESSION_ERROR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

/// The decoding side of a connection's HPACK context.
pub(crate) struct Decoder {
    /// The dynamic table, newest entry first.
    table: VecDeque<Entry>,
    /// Its size as HPACK counts it (32 bytes an entry plus name and value).
    size: usize,
    /// The size the encoder set (at most `allowed`).
    max_size: usize,
    /// The size the client allows (its SETTINGS_HEADER_TABLE_SIZE).
    allowed: usize,
    /// Where Huffman-coded names and values are decoded into.
    name_buf: Vec<u8>,
    value_buf: Vec<u8>,
}

impl Decoder {
    /// A decoder whose table may grow to `allowed` bytes.
    pub(crate) fn new(allowed: usize) -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: allowed,
            allowed,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
        }
    }

    /// Decodes `block`, handing each field to `field` in order.
    pub(crate) fn decode(
        &mut self,
        mut block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Malformed> {
        while let Some(&first) = block.first() {
            if first & 0x80 != 0 {
                let index = int(&mut block, 7)?;
                let (name, value) = entry(&self.table, index)?;
                field(name, value);
            } else if first & 0xc0 == 0x40 {
                self.literal(&mut block, 6, true, &mut field)?;
            } else if first & 0xe0 == 0x20 {
                let size = int(&mut block, 5)?;
                if size > self.allowed {
                    return Err(Malformed);
                }
                self.max_size = size;
                self.evict(0);
            } else {
                // Without indexing (0000) or never indexed (0001): the same to a decoder.
                self.literal(&mut block, 4, false, &mut field)?;
            }
        }
        Ok(())
    }

    /// A literal field, its name indexed or literal; added to the table when `index`.
    fn literal(
        &mut self,
        block: &mut &[u8],
        prefix: u8,
        index: bool,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Malformed> {
        let mut name_buf = std::mem::take(&mut self.name_buf);
        let mut value_buf = std::mem::take(&mut self.value_buf);
        let name_index = int(block, prefix)?;
        let name = match name_index {
            0 => string(block, &mut name_buf)?.unwrap_or(&name_buf),
            i => entry(&self.table, i)?.0,
        };
        let value = string(block, &mut value_buf)?.unwrap_or(&value_buf);
        field(name, value);
        let added = index.then(|| (Box::from(name), Box::from(value)));
        self.name_buf = name_buf;
        self.value_buf = value_buf;
        if let Some((name, value)) = added {
            self.insert(name, value);
        }
        Ok(())
    }

    /// Adds an entry, evicting the oldest to make room (RFC 7541 §4.4).
    fn insert(&mut self, name: Box<[u8]>, value: Box<[u8]>) {
        let size = 32 + name.len() + value.len();
        self.evict(size);
        if size <= self.max_size {
            self.size += size;
            self.table.push_front((name, value));
        }
    }

    /// Evicts the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max_size {
            let Some((name, value)) = self.table.pop_back() else {
                break;
            };
            self.size -= 32 + name.len() + value.len();
        }
    }
}

/// The entry at `index`: the static table's (1 to 61), then the dynamic table's.
fn entry(table: &VecDeque<Entry>, index: usize) -> Result<(&[u8], &[u8]), Malformed> {
    match index {
        0 => Err(Malformed),
        i if i <= STATIC.len() => {
            let (name, value) = STATIC[i - 1];
            Ok((name.as_bytes(), value.as_bytes()))
        }
        i => table
            .get(i - STATIC.len() - 1)
            .map(|(name, value)| (&name[..], &value[..]))
            .ok_or(Malformed),
    }
}

/// Reads an integer with a `prefix`-bit prefix off the front of `block` (RFC 7541 §5.1).
fn int(block: &mut &[u8], prefix: u8) -> Result<usize, Malformed> {
    let max = (1usize << prefix) - 1;
    let (&first, rest) = block.split_first().ok_or(Malformed)?;
    *block = rest;
    let mut value = usize::from(first) & max;
    if value < max {
        return Ok(value);
    }
    let mut shift = 0;
    loop {
        let (&byte, rest) = block.split_first().ok_or(Malformed)?;
        *block = rest;
        value += usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
        if shift > 28 {
            return Err(Malformed);
        }
    }
}

/// Reads a string off the front of `block` (RFC 7541 §5.2): raw, borrowed from the block, or
/// Huffman-coded, decoded into `buf` (then None).
fn string<'a>(block: &mut &'a [u8], buf: &mut Vec<u8>) -> Result<Option<&'a [u8]>, Malformed> {
    let huffman = block.first().ok_or(Malformed)? & 0x80 != 0;
    let len = int(block, 7)?;
    if len > block.len() {
        return Err(Malformed);
    }
    let (raw, rest) = block.split_at(len);
    *block = rest;
    if !huffman {
        return Ok(Some(raw));
    }
    buf.clear();
    huffman_decode(raw, buf)?;
    Ok(None)
}

/// A tree node's child that is a symbol rather than another node.
const LEAF: u16 = 0x8000;
/// The end-of-string symbol, never in a string.
const EOS: u16 = 256;

/// The Huffman code as a binary tree: each node's children for bit 0 and bit 1, a node's index or
/// `LEAF | symbol`.
fn tree() -> &'static [[u16; 2]] {
    static TREE: OnceLock<Vec<[u16; 2]>> = OnceLock::new();
    TREE.get_or_init(|| {
        let mut nodes = vec![[0u16; 2]];
        for (symbol, &(code, len)) in CODE.iter().enumerate() {
            let mut node = 0;
            for i in (0..len).rev() {
                let bit = ((code >> i) & 1) as usize;
                if i == 0 {
                    nodes[node][bit] = LEAF | symbol as u16;
                } else {
                    if nodes[node][bit] == 0 {
                        nodes.push([0; 2]);
                        nodes[node][bit] = (nodes.len() - 1) as u16;
                    }
                    node = usize::from(nodes[node][bit]);
                }
            }
        }
        nodes
    })
}

/// Decodes a Huffman-coded string into `dst` (RFC 7541 §5.2: padding is at most 7 bits, all ones).
fn huffman_decode(src: &[u8], dst: &mut Vec<u8>) -> Result<(), Malformed> {
    let tree = tree();
    let (mut node, mut depth, mut ones) = (0usize, 0u32, true);
    for &byte in src {
        for i in (0..8).rev() {
            let bit = (byte >> i) & 1;
            let next = tree[node][usize::from(bit)];
            depth += 1;
            ones &= bit == 1;
            if next & LEAF != 0 {
                let symbol = next & !LEAF;
                if symbol == EOS {
                    return Err(Malformed);
                }
                dst.push(symbol as u8);
                (node, depth, ones) = (0, 0, true);
            } else {
                node = usize::from(next);
            }
        }
    }
    if depth > 7 || !ones {
        return Err(Malformed);
    }
    Ok(())
}

/// The Huffman code (RFC 7541 Appendix B): each symbol's code and its length in bits.
const CODE: [(u32, u8); 257] = [
    (0x1ff8, 13),
    (0x7fffd8, 23),
    (0xfffffe2, 28),
    (0xfffffe3, 28),
    (0xfffffe4, 28),
    (0xfffffe5, 28),
    (0xfffffe6, 28),
    (0xfffffe7, 28),
    (0xfffffe8, 28),
    (0xffffea, 24),
    (0x3ffffffc, 30),
    (0xfffffe9, 28),
    (0xfffffea, 28),
    (0x3ffffffd, 30),
    (0xfffffeb, 28),
    (0xfffffec, 28),
    (0xfffffed, 28),
    (0xfffffee, 28),
    (0xfffffef, 28),
    (0xffffff0, 28),
    (0xffffff1, 28),
    (0xffffff2, 28),
    (0x3ffffffe, 30),
    (0xffffff3, 28),
    (0xffffff4, 28),
    (0xffffff5, 28),
    (0xffffff6, 28),
    (0xffffff7, 28),
    (0xffffff8, 28),
    (0xffffff9, 28),
    (0xffffffa, 28),
    (0xffffffb, 28),
    (0x14, 6),
    (0x3f8, 10),
    (0x3f9, 10),
    (0xffa, 12),
    (0x1ff9, 13),
    (0x15, 6),
    (0xf8, 8),
    (0x7fa, 11),
    (0x3fa, 10),
    (0x3fb, 10),
    (0xf9, 8),
    (0x7fb, 11),
    (0xfa, 8),
    (0x16, 6),
    (0x17, 6),
    (0x18, 6),
    (0x0, 5),
    (0x1, 5),
    (0x2, 5),
    (0x19, 6),
    (0x1a, 6),
    (0x1b, 6),
    (0x1c, 6),
    (0x1d, 6),
    (0x1e, 6),
    (0x1f, 6),
    (0x5c, 7),
    (0xfb, 8),
    (0x7ffc, 15),
    (0x20, 6),
    (0xffb, 12),
    (0x3fc, 10),
    (0x1ffa, 13),
    (0x21, 6),
    (0x5d, 7),
    (0x5e, 7),
    (0x5f, 7),
    (0x60, 7),
    (0x61, 7),
    (0x62, 7),
    (0x63, 7),
    (0x64, 7),
    (0x65, 7),
    (0x66, 7),
    (0x67, 7),
    (0x68, 7),
    (0x69, 7),
    (0x6a, 7),
    (0x6b, 7),
    (0x6c, 7),
    (0x6d, 7),
    (0x6e, 7),
    (0x6f, 7),
    (0x70, 7),
    (0x71, 7),
    (0x72, 7),
    (0xfc, 8),
    (0x73, 7),
    (0xfd, 8),
    (0x1ffb, 13),
    (0x7fff0, 19),
    (0x1ffc, 13),
    (0x3ffc, 14),
    (0x22, 6),
    (0x7ffd, 15),
    (0x3, 5),
    (0x23, 6),
    (0x4, 5),
    (0x24, 6),
    (0x5, 5),
    (0x25, 6),
    (0x26, 6),
    (0x27, 6),
    (0x6, 5),
    (0x74, 7),
    (0x75, 7),
    (0x28, 6),
    (0x29, 6),
    (0x2a, 6),
    (0x7, 5),
    (0x2b, 6),
    (0x76, 7),
    (0x2c, 6),
    (0x8, 5),
    (0x9, 5),
    (0x2d, 6),
    (0x77, 7),
    (0x78, 7),
    (0x79, 7),
    (0x7a, 7),
    (0x7b, 7),
    (0x7ffe, 15),
    (0x7fc, 11),
    (0x3ffd, 14),
    (0x1ffd, 13),
    (0xffffffc, 28),
    (0xfffe6, 20),
    (0x3fffd2, 22),
    (0xfffe7, 20),
    (0xfffe8, 20),
    (0x3fffd3, 22),
    (0x3fffd4, 22),
    (0x3fffd5, 22),
    (0x7fffd9, 23),
    (0x3fffd6, 22),
    (0x7fffda, 23),
    (0x7fffdb, 23),
    (0x7fffdc, 23),
    (0x7fffdd, 23),
    (0x7fffde, 23),
    (0xffffeb, 24),
    (0x7fffdf, 23),
    (0xffffec, 24),
    (0xffffed, 24),
    (0x3fffd7, 22),
    (0x7fffe0, 23),
    (0xffffee, 24),
    (0x7fffe1, 23),
    (0x7fffe2, 23),
    (0x7fffe3, 23),
    (0x7fffe4, 23),
    (0x1fffdc, 21),
    (0x3fffd8, 22),
    (0x7fffe5, 23),
    (0x3fffd9, 22),
    (0x7fffe6, 23),
    (0x7fffe7, 23),
    (0xffffef, 24),
    (0x3fffda, 22),
    (0x1fffdd, 21),
    (0xfffe9, 20),
    (0x3fffdb, 22),
    (0x3fffdc, 22),
    (0x7fffe8, 23),
    (0x7fffe9, 23),
    (0x1fffde, 21),
    (0x7fffea, 23),
    (0x3fffdd, 22),
    (0x3fffde, 22),
    (0xfffff0, 24),
    (0x1fffdf, 21),
    (0x3fffdf, 22),
    (0x7fffeb, 23),
    (0x7fffec, 23),
    (0x1fffe0, 21),
    (0x1fffe1, 21),
    (0x3fffe0, 22),
    (0x1fffe2, 21),
    (0x7fffed, 23),
    (0x3fffe1, 22),
    (0x7fffee, 23),
    (0x7fffef, 23),
    (0xfffea, 20),
    (0x3fffe2, 22),
    (0x3fffe3, 22),
    (0x3fffe4, 22),
    (0x7ffff0, 23),
    (0x3fffe5, 22),
    (0x3fffe6, 22),
    (0x7ffff1, 23),
    (0x3ffffe0, 26),
    (0x3ffffe1, 26),
    (0xfffeb, 20),
    (0x7fff1, 19),
    (0x3fffe7, 22),
    (0x7ffff2, 23),
    (0x3fffe8, 22),
    (0x1ffffec, 25),
    (0x3ffffe2, 26),
    (0x3ffffe3, 26),
    (0x3ffffe4, 26),
    (0x7ffffde, 27),
    (0x7ffffdf, 27),
    (0x3ffffe5, 26),
    (0xfffff1, 24),
    (0x1ffffed, 25),
    (0x7fff2, 19),
    (0x1fffe3, 21),
    (0x3ffffe6, 26),
    (0x7ffffe0, 27),
    (0x7ffffe1, 27),
    (0x3ffffe7, 26),
    (0x7ffffe2, 27),
    (0xfffff2, 24),
    (0x1fffe4, 21),
    (0x1fffe5, 21),
    (0x3ffffe8, 26),
    (0x3ffffe9, 26),
    (0xffffffd, 28),
    (0x7ffffe3, 27),
    (0x7ffffe4, 27),
    (0x7ffffe5, 27),
    (0xfffec, 20),
    (0xfffff3, 24),
    (0xfffed, 20),
    (0x1fffe6, 21),
    (0x3fffe9, 22),
    (0x1fffe7, 21),
    (0x1fffe8, 21),
    (0x7ffff3, 23),
    (0x3fffea, 22),
    (0x3fffeb, 22),
    (0x1ffffee, 25),
    (0x1ffffef, 25),
    (0xfffff4, 24),
    (0xfffff5, 24),
    (0x3ffffea, 26),
    (0x7ffff4, 23),
    (0x3ffffeb, 26),
    (0x7ffffe6, 27),
    (0x3ffffec, 26),
    (0x3ffffed, 26),
    (0x7ffffe7, 27),
    (0x7ffffe8, 27),
    (0x7ffffe9, 27),
    (0x7ffffea, 27),
    (0x7ffffeb, 27),
    (0xffffffe, 28),
    (0x7ffffec, 27),
    (0x7ffffed, 27),
    (0x7ffffee, 27),
    (0x7ffffef, 27),
    (0x7fffff0, 27),
    (0x3ffffee, 26),
    (0x3fffffff, 30),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http2::frame::put_int;

    /// Huffman-codes `s` (the tests' encoder; the client sends no Huffman strings).
    fn huffman(s: &[u8]) -> Vec<u8> {
        let (mut out, mut acc, mut bits) = (Vec::new(), 0u64, 0u32);
        for &b in s {
            let (code, len) = CODE[usize::from(b)];
            acc = (acc << len) | u64::from(code);
            bits += u32::from(len);
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) | ((1 << (8 - bits)) - 1)) as u8);
        }
        out
    }

    fn put_huffman(out: &mut Vec<u8>, s: &[u8]) {
        let coded = huffman(s);
        put_int(out, 0x80, 7, coded.len());
        out.extend_from_slice(&coded);
    }

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn decoded(decoder: &mut Decoder, block: &[u8]) -> Result<Fields, Malformed> {
        let mut fields = Vec::new();
        decoder.decode(block, |n, v| fields.push((n.to_vec(), v.to_vec())))?;
        Ok(fields)
    }

    #[test]
    fn every_byte_survives_huffman_coding() {
        let all: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        huffman_decode(&huffman(&all), &mut out).unwrap();
        assert_eq!(out, all);
        // Padding longer than 7 bits, or not all ones, is refused: "0" is 00000.
        let mut out = Vec::new();
        assert_eq!(huffman_decode(&[0x07], &mut out), Ok(()));
        assert_eq!(out, b"0");
        assert_eq!(huffman_decode(&[0x02], &mut out), Err(Malformed));
        assert_eq!(huffman_decode(&[0xff], &mut out), Err(Malformed));
    }

    #[test]
    fn blocks_decode_as_loona_hpack_decodes_them() {
        // An answer as a server sends it twice: literals with indexing (Huffman-coded and raw),
        // then the same fields by index, with a size update and a never-indexed field between.
        let mut first = Vec::new();
        put_int(&mut first, 0x80, 7, 8); // :status 200
        put_int(&mut first, 0x40, 6, 31); // content-type, indexed name
        put_huffman(&mut first, b"text/plain; charset=utf-8");
        put_int(&mut first, 0x40, 6, 0); // a new name, Huffman-coded
        put_huffman(&mut first, b"x-request-id");
        put_huffman(&mut first, b"0123456789abcdef");
        put_int(&mut first, 0x40, 6, 33); // date
        first.push(29);
        first.extend_from_slice(b"Thu, 03 Dec 2026 21:00:00 GMT");
        let mut second = Vec::new();
        put_int(&mut second, 0x20, 5, 4096);
        put_int(&mut second, 0x80, 7, 14); // :status 500
        put_int(&mut second, 0x80, 7, 62); // date (newest)
        put_int(&mut second, 0x80, 7, 64); // content-type (oldest)
        put_int(&mut second, 0x10, 4, 63); // x-request-id's name, never indexed
        put_huffman(&mut second, b"other");
        let mut ours = Decoder::new(4096);
        let mut theirs = loona_hpack::Decoder::new();
        for block in [&first, &second] {
            let expected = theirs.decode(block).unwrap();
            assert_eq!(decoded(&mut ours, block).unwrap(), expected);
        }
        assert_eq!(ours.table.len(), 3);
    }

    #[test]
    fn the_table_evicts_its_oldest_entries_and_keeps_to_size_updates() {
        let mut decoder = Decoder::new(100);
        let mut block = Vec::new();
        for value in [b"aaaa", b"bbbb", b"cccc"] {
            put_int(&mut block, 0x40, 6, 33);
            block.push(4);
            block.extend_from_slice(value);
        }
        // Each entry is 32 + 4 + 4 = 40 bytes: two fit in 100.
        decoded(&mut decoder, &block).unwrap();
        assert_eq!(decoder.table.len(), 2);
        assert_eq!(&*decoder.table[0].1, b"cccc");
        assert_eq!(decoded(&mut decoder, &[0x80 | 64]), Err(Malformed));
        let mut shrink = Vec::new();
        put_int(&mut shrink, 0x20, 5, 40);
        decoded(&mut decoder, &shrink).unwrap();
        assert_eq!((decoder.table.len(), decoder.size), (1, 40));
        let mut too_big = Vec::new();
        put_int(&mut too_big, 0x20, 5, 101);
        assert_eq!(decoded(&mut decoder, &too_big), Err(Malformed));
    }

    #[test]
    fn truncated_or_out_of_range_blocks_are_malformed() {
        let mut decoder = Decoder::new(4096);
        assert_eq!(decoded(&mut decoder, &[0x80]), Err(Malformed));
        assert_eq!(decoded(&mut decoder, &[0x80 | 70]), Err(Malformed));
        assert_eq!(decoded(&mut decoder, &[0x7f]), Err(Malformed));
        assert_eq!(decoded(&mut decoder, &[0x41, 0x05, b'a']), Err(Malformed));
        assert_eq!(
            decoded(&mut decoder, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(Malformed)
        );
    }
}
