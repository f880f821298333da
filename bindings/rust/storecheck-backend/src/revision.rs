//! The continuity store's snapshot revision, as the protocol's default
//! (`snapshot_revision: "sha256"`) defines it and the kit computes it.

use sha2::{Digest, Sha256};

/// The revision of a snapshot's stored bytes under the default
/// `snapshot_revision` capability ([`crate::wire::SnapshotRevision::Sha256`]):
/// the lowercase hex SHA-256 of the bytes exactly as stored, never parsed.
/// A store that computes its revision this way, and so declares `"sha256"`
/// (or nothing), is checked by the delete-at-revision spec, and the models
/// compute the same revisions; one that declares `"opaque"` is not.
///
/// ```
/// assert_eq!(
///     storecheck_backend::snapshot_revision(b"abc"),
///     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// );
/// ```
pub fn snapshot_revision(data: &[u8]) -> String {
    let digest = Sha256::digest(data);
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push(char::from(HEX[usize::from(b >> 4)]));
        hex.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

#[cfg(test)]
mod tests {
    use super::snapshot_revision;

    #[test]
    fn known_digests() {
        // FIPS 180-2's examples, and the empty input.
        assert_eq!(snapshot_revision(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(snapshot_revision(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(
            snapshot_revision(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        // Bytes that are no text, as a snapshot may be (`printf '\x00\xff\x80' | sha256sum`).
        assert_eq!(snapshot_revision(&[0, 0xff, 0x80]), "f742b965f156c10374bc23aea96e3a8aff8facd6fc079defeaa30219ad86f211");
    }
}
