//! Random bytes from the kernel's `getrandom(2)`: the one source for the workspace's random
//! names (probe keys, temporary files), envelope salts and generated secrets.

use std::fmt::Write as _;

/// Fills `bytes` from `getrandom(2)` (a short read is continued).
pub fn fill(bytes: &mut [u8]) -> std::io::Result<()> {
    let mut filled = 0;
    while filled < bytes.len() {
        filled +=
            rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())?;
    }
    Ok(())
}

/// 16 lowercase hex digits from 8 random bytes.
pub(crate) fn random_hex16() -> std::io::Result<String> {
    let mut bytes = [0u8; 8];
    fill(&mut bytes)?;
    Ok(hex16(u64::from_be_bytes(bytes)))
}

/// `value` as 16 lowercase hex digits.
pub(crate) fn hex16(value: u64) -> String {
    let mut out = String::with_capacity(16);
    let _ = write!(out, "{value:016x}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_sixteen_lowercase_digits() {
        assert_eq!(hex16(0xab), "00000000000000ab");
        let random = random_hex16().unwrap();
        assert_eq!(random.len(), 16);
        assert!(random.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)));
        assert_ne!(random_hex16().unwrap(), random_hex16().unwrap());
    }
}
