//! Per-environment random streams.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

/// The random stream of one environment: xoshiro256++ seeded from
/// (seed, environment index) through two SplitMix64 rounds, so that
/// environments draw independent streams and the same seed gives the same
/// draws on every machine and thread count.
#[derive(Clone, Debug)]
pub struct EnvRng(Xoshiro256PlusPlus);

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl EnvRng {
    /// The stream of environment `env` under `seed`.
    pub fn new(seed: u64, env: usize) -> Self {
        Self(Xoshiro256PlusPlus::seed_from_u64(splitmix64(splitmix64(seed) ^ env as u64)))
    }

    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.0.random::<f64>()
    }

    /// Standard normal.
    pub fn normal(&mut self) -> f64 {
        self.0.sample(StandardNormal)
    }

    /// Adds uniform noise in [−scale, scale) to every entry of `x`.
    pub fn add_uniform(&mut self, x: &mut [f64], scale: f64) {
        for v in x {
            *v += self.uniform(-scale, scale);
        }
    }

    /// Adds scale × standard normal noise to every entry of `x`.
    pub fn add_normal(&mut self, x: &mut [f64], scale: f64) {
        for v in x {
            *v += scale * self.normal();
        }
    }
}
