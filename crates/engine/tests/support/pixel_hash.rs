//! The fixture scripts' pixel hash (`hash_pixels` in fixtures/make_fixtures.py), shared by the parity
//! test and the full-size parity example so both feed the model exactly the pixels the oracle saw.

/// `(n, 3, size, size)` pixel bytes from a murmur3-style finaliser of (flat NCHW index, seed); the script then
/// applies ToTensor + Normalize(0.5, 0.5) in f32, as the model does on its device.
pub fn hash_pixels(seed: u32, n: usize, size: usize) -> Vec<u8> {
    (0..(n * 3 * size * size) as u32)
        .map(|i| {
            let mut x = i
                .wrapping_mul(0x9E37_79B1)
                .wrapping_add(seed.wrapping_mul(0x85EB_CA77));
            x ^= x >> 15;
            x = x.wrapping_mul(0x2C1B_3C6D);
            x ^= x >> 12;
            x = x.wrapping_mul(0x297A_2D39);
            x ^= x >> 15;
            (x >> 24) as u8
        })
        .collect()
}
