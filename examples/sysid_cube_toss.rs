//! System identification on one real cube toss (ContactNets data, shared
//! folder `data/contactnets_cube_toss/toss_000.csv`) through the
//! [`cenic::sysid`] library: fits the side length, friction, contact
//! stiffness and dissipation of `scenes::cube_toss()` with burn's Adam on
//! overlapping 8-sample segments, validating on the same toss. The product
//! version over the whole data set, with a train/validation split and
//! outputs, is `cenic sysid fit` (README).
//!
//! ```text
//! cargo run --release --example sysid_cube_toss [-- path/to/toss.csv [epochs]]
//! ```

use cenic::sysid::{self, CubeModel, FitConfig, FitParam};
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/contactnets_cube_toss/toss_000.csv")
    });
    let epochs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(20);
    if !path.exists() {
        println!("SKIPPED: {} not found (pass the path of a ContactNets toss CSV)", path.display());
        return;
    }
    let run = || -> Result<(), sysid::SysidError> {
        let toss = vec![sysid::load_toss(&path, 10)?];
        println!("{}: {} samples at {:.1} Hz", path.display(), toss[0].len(), 1.0 / toss[0].dt);
        let cube = CubeModel::new(cenic::scenes::cube_toss())?;
        let cfg = FitConfig {
            segment: 8,
            stride: 2,
            epochs,
            batch: 16,
            lr_final: 0.005,
            horizons: vec![4, 16],
            overlay_tosses: 0,
            progress: true,
            ..FitConfig::new(&cube, FitParam::ALL_BUT_MASS.to_vec(), cube.nominal)
        };
        let r = sysid::fit(&cube, &toss, &toss, &cfg)?;
        println!("initial: {}\nfitted:  {}", r.initial.summary(), r.fitted.summary());
        println!("initial model:\n{}\nfitted model:\n{}", r.eval_initial.text(), r.eval_fitted.text());
        println!("{:.1} s; reported by the ContactNets authors: μ ≈ 0.18, side 0.1048 m", r.total_seconds);
        Ok(())
    };
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
