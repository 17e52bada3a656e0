//! Moonshine's tokenizer: token ids → text (decoding only; transcription never encodes).
//!
//! `tokenizer.bin` (shipped with moonshine-cpp, copied by `tools/moonshine/convert.py`) holds
//! one record per token id in id order, each a length byte followed by that many bytes of the
//! token's bytes (ids 3..=258 hold the single bytes 0x00..=0xFF: SentencePiece's byte
//! fallback, so a character may span several tokens). Ids 0 (unk), 1 (BOS), 2 (EOS) and ids
//! at or above the record count (32000 in base-en: the model's vocabulary is 32768) are
//! special and decode to nothing. U+2581 (`▁`) marks a space
//! (SentencePiece's convention); one leading space is stripped.

use alloc::string::String;
use alloc::vec::Vec;

/// First id that decodes to text (0, 1, 2 are unk, BOS, EOS).
const FIRST_TEXT_ID: u32 = 3;
/// SentencePiece's word-boundary mark, U+2581, in UTF-8.
const SPACE_MARK: &str = "\u{2581}";

/// A parsed `tokenizer.bin`.
#[derive(Clone, Debug)]
pub struct Tokenizer {
    /// All records' bytes, concatenated.
    bytes: Vec<u8>,
    /// `ends[id]`: end of record `id` in `bytes` (its start is `ends[id - 1]`, or 0).
    ends: Vec<u32>,
}

/// Records in base-en's `tokenizer.bin` (ids 0..32000; the LM head's other ids are special).
pub const RECORDS: usize = 32_000;

/// Why `tokenizer.bin` could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenizerError {
    /// The data ends inside this record (token id), or holds none (record 0).
    Truncated {
        /// The record.
        record: usize,
    },
    /// Not Moonshine base-en's tokenizer: the number of records found.
    Records {
        /// Records in the data.
        found: usize,
    },
    /// A byte-fallback id (3..=258) does not hold its single byte.
    ByteToken {
        /// The id.
        id: usize,
    },
}

impl core::fmt::Display for TokenizerError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TokenizerError::Truncated { record } => {
                write!(f, "tokenizer data ends inside record {record}")
            }
            TokenizerError::Records { found } => {
                write!(f, "tokenizer has {found} records, Moonshine base-en's has {RECORDS}")
            }
            TokenizerError::ByteToken { id } => {
                write!(f, "tokenizer record {id} is not the byte 0x{:02x}", id - 3)
            }
        }
    }
}

impl Tokenizer {
    /// Parses `tokenizer.bin` data: records of `[u8 length][length bytes]` until the end.
    ///
    /// # Errors
    /// [`TokenizerError`] when the data ends inside a record, or holds no record at all.
    pub fn parse(data: &[u8]) -> Result<Self, TokenizerError> {
        let mut bytes = Vec::with_capacity(data.len());
        let mut ends = Vec::new();
        let mut at = 0;
        while at < data.len() {
            let len = usize::from(data[at]);
            let record = data
                .get(at + 1..at + 1 + len)
                .ok_or(TokenizerError::Truncated { record: ends.len() })?;
            bytes.extend_from_slice(record);
            ends.push(bytes.len() as u32);
            at += 1 + len;
        }
        if ends.is_empty() {
            return Err(TokenizerError::Truncated { record: 0 });
        }
        Ok(Self { bytes, ends })
    }

    /// Parses `tokenizer.bin` and checks it is Moonshine base-en's: exactly [`RECORDS`]
    /// records, ids 3..=258 holding the bytes 0x00..=0xFF.
    ///
    /// # Errors
    /// [`TokenizerError`] naming the first problem.
    pub fn parse_moonshine(data: &[u8]) -> Result<Self, TokenizerError> {
        let t = Self::parse(data)?;
        if t.len() != RECORDS {
            return Err(TokenizerError::Records { found: t.len() });
        }
        for id in FIRST_TEXT_ID..FIRST_TEXT_ID + 256 {
            if t.token_bytes(id) != [(id - FIRST_TEXT_ID) as u8] {
                return Err(TokenizerError::ByteToken { id: id as usize });
            }
        }
        Ok(t)
    }

    /// Number of records (token ids with text; 32000 for base-en).
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no records (never true for a parsed tokenizer).
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The bytes token `id` stands for: its record, or nothing for special ids.
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        if id < FIRST_TEXT_ID || id as usize >= self.ends.len() {
            return &[];
        }
        let end = self.ends[id as usize] as usize;
        let start = self.ends[id as usize - 1] as usize;
        &self.bytes[start..end]
    }

    /// Decodes `ids` to text: the tokens' bytes concatenated (invalid UTF-8 replaced by
    /// U+FFFD), `▁` replaced by a space, one leading space removed.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut raw = Vec::new();
        for &id in ids {
            raw.extend_from_slice(self.token_bytes(id));
        }
        let text = String::from_utf8_lossy(&raw).replace(SPACE_MARK, " ");
        match text.strip_prefix(' ') {
            Some(rest) => String::from(rest),
            None => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn data(records: &[&[u8]]) -> Vec<u8> {
        let mut d = Vec::new();
        for r in records {
            d.push(r.len() as u8);
            d.extend_from_slice(r);
        }
        d
    }

    fn tokenizer() -> Tokenizer {
        let mut records: Vec<&[u8]> = vec![b"<unk>", b"<s>", b"</s>"];
        let bytes: Vec<[u8; 1]> = (0..=255u8).map(|b| [b]).collect();
        records.extend(bytes.iter().map(|b| &b[..]));
        records.push("\u{2581}Ever".as_bytes()); // 259
        records.push("\u{2581}tried".as_bytes()); // 260
        records.push(b"."); // 261
        records.push(b""); // 262, an empty record
        Tokenizer::parse(&data(&records)).unwrap()
    }

    #[test]
    fn decodes_words_spaces_and_specials() {
        let t = tokenizer();
        assert_eq!(t.len(), 263);
        assert_eq!(t.decode(&[1, 259, 260, 261, 2]), "Ever tried.");
        assert_eq!(t.decode(&[260, 0, 262, 40_000]), "tried");
        assert_eq!(t.decode(&[]), "");
    }

    #[test]
    fn byte_fallback_builds_utf8_and_replaces_invalid() {
        let t = tokenizer();
        // "é" is 0xC3 0xA9.
        assert_eq!(t.decode(&[259, 3 + 0xC3, 3 + 0xA9]), "Everé");
        assert_eq!(t.decode(&[3 + 0xC3]), "\u{FFFD}");
    }

    #[test]
    fn truncated_data_is_an_error() {
        let mut d = data(&[b"ab", b"cde"]);
        d.pop();
        assert_eq!(Tokenizer::parse(&d).unwrap_err(), TokenizerError::Truncated { record: 1 });
        assert_eq!(Tokenizer::parse(&[]).unwrap_err(), TokenizerError::Truncated { record: 0 });
    }

    #[test]
    fn moonshine_layout_is_checked() {
        let mut records: Vec<Vec<u8>> = vec![b"<unk>".to_vec(), b"<s>".to_vec(), b"</s>".to_vec()];
        records.extend((0..=255u8).map(|b| vec![b]));
        records.resize(RECORDS, b"x".to_vec());
        let refs: Vec<&[u8]> = records.iter().map(|r| &r[..]).collect();
        assert_eq!(Tokenizer::parse_moonshine(&data(&refs)).unwrap().len(), RECORDS);
        assert_eq!(
            Tokenizer::parse_moonshine(&data(&refs[..RECORDS - 1])).unwrap_err(),
            TokenizerError::Records { found: RECORDS - 1 }
        );
        let mut bad = refs.clone();
        bad[3 + 0x41] = b"B";
        assert_eq!(
            Tokenizer::parse_moonshine(&data(&bad)).unwrap_err(),
            TokenizerError::ByteToken { id: 3 + 0x41 }
        );
    }
}
