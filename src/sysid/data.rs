//! Recorded tosses: CSV loading with line-exact errors, velocities from
//! poses, segments and train/validation splits.

use super::SysidError;
use crate::math::{Quat, Vec3};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

/// Columns a toss file must have (any order; other columns are ignored).
pub const REQUIRED_COLUMNS: [&str; 8] = ["t", "px", "py", "pz", "qw", "qx", "qy", "qz"];

/// Largest deviation of a sample interval from the toss's median interval
/// (relative). Simulations run over the mean interval, so a dropped or
/// duplicated frame would silently shift every later sample.
pub const INTERVAL_TOLERANCE: f64 = 0.01;

/// Largest accepted |‖q‖ − 1| of a recorded quaternion before it is normalised.
pub const QUAT_NORM_TOLERANCE: f64 = 1e-3;

/// Largest tilt (degrees) of the last sample against the nearest face-down
/// pose that [`Toss::level`] corrects; a larger one means the toss does not
/// end lying on a face.
pub const LEVEL_MAX_TILT_DEG: f64 = 5.0;

/// One recorded pose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    /// Position of the body origin in the world frame (m).
    pub pos: [f64; 3],
    /// Orientation body to world, unit quaternion (w, x, y, z).
    pub quat: [f64; 4],
}

/// One recorded toss: poses at a uniform sampling interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Toss {
    /// The file it was read from.
    pub path: PathBuf,
    /// Index used by train/validation splits: the number at the end of the
    /// file stem (`toss_042.csv` → 42), else the position in the sorted directory.
    pub index: usize,
    /// Mean sampling interval (s).
    pub dt: f64,
    /// The samples, in time order.
    pub poses: Vec<Pose>,
}

impl Toss {
    /// The file's name (for messages).
    pub fn name(&self) -> String {
        self.path.file_name().map_or_else(|| self.path.display().to_string(), |n| n.to_string_lossy().into_owned())
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.poses.len()
    }

    /// True when the toss has no samples (never for a loaded toss).
    pub fn is_empty(&self) -> bool {
        self.poses.is_empty()
    }

    /// Simulator state at sample `k` (nq + nv = 13 values of a free joint:
    /// position (m), quaternion, linear velocity in the world frame (m/s),
    /// angular velocity in the body frame (rad/s)), with velocities from the
    /// recorded poses (the recorded velocity columns are backward
    /// differences, a sample late and noisy):
    /// - 0 < k < len − 1: central differences, v = (p_{k+1} − p_{k−1})/(2Δt)
    ///   and ω = log(q_{k−1}⁻¹ q_{k+1})/(2Δt), exact for constant velocities;
    /// - k = 0: second-order one-sided differences from samples 0, 1, 2,
    ///   v = (−3p₀ + 4p₁ − p₂)/(2Δt) and ω = (4 log(q₀⁻¹q₁) − log(q₀⁻¹q₂))/(2Δt).
    ///
    /// # Panics
    /// If k is the last sample or the toss has fewer than 3 samples.
    pub fn state(&self, k: usize) -> [f64; 13] {
        assert!(self.len() >= 3 && k + 1 < self.len(), "sample {k} of a toss of {} samples", self.len());
        let p = |i: usize| Vec3::from_array(self.poses[i].pos);
        let q = |i: usize| Quat::from_array(self.poses[i].quat);
        let h = self.dt;
        let (v, w) = if k == 0 {
            let v = (p(0) * -3.0 + p(1) * 4.0 - p(2)) * (1.0 / (2.0 * h));
            let r1 = (q(0).conj() * q(1)).log();
            let r2 = (q(0).conj() * q(2)).log();
            (v, (r1 * 4.0 - r2) * (1.0 / (2.0 * h)))
        } else {
            let v = (p(k + 1) - p(k - 1)) * (1.0 / (2.0 * h));
            (v, (q(k - 1).conj() * q(k + 1)).log() * (1.0 / (2.0 * h)))
        };
        let s = &self.poses[k];
        let mut x = [0.0; 13];
        x[..3].copy_from_slice(&s.pos);
        x[3..7].copy_from_slice(&s.quat);
        x[7..10].copy_from_slice(&v.to_array());
        x[10..13].copy_from_slice(&w.to_array());
        x
    }
}

impl Toss {
    /// Per-toss orientation calibration: rotates every recorded orientation
    /// by one constant body-frame rotation C (q_k ← q_k C), the smallest that
    /// makes the last sample lie exactly flat on the body face nearest to
    /// the table (the table normal is the world z axis). Positions are kept.
    /// Returns the correction angle (rad).
    ///
    /// Why: a cube resting on a table is flat, but the tracked resting poses
    /// of the ContactNets tosses are tilted by 0.2–0.9° (constant within a
    /// toss, varying between tosses): a tracking offset of the body frame.
    /// Relative angles are invariant under q ↦ q C, so errors measured on
    /// levelled tosses equal the errors against the raw recorded
    /// orientations of a predictor with a per-toss sensor offset C (it
    /// starts from q_k C and reports q C⁻¹).
    ///
    /// Errors: the last sample is tilted more than [`LEVEL_MAX_TILT_DEG`]
    /// from every face-down pose (the toss does not end on a face).
    pub fn level(&mut self) -> Result<f64, SysidError> {
        let last = Quat::from_array(self.poses[self.len() - 1].quat);
        // World up in the body frame; the nearest body axis is the face normal.
        let up = last.to_mat3().row(2);
        let i = (0..3).max_by(|&a, &b| up[a].abs().total_cmp(&up[b].abs())).unwrap_or(2);
        let mut face = Vec3::zero();
        face[i] = up[i].signum();
        let axis = face.cross(up);
        let angle = axis.norm().atan2(face.dot(up));
        if angle.to_degrees() > LEVEL_MAX_TILT_DEG {
            return Err(SysidError::Input(format!(
                "{}: cannot level: the last sample (sample {}) is tilted {:.1}° from lying on a face (at most {LEVEL_MAX_TILT_DEG}°)",
                self.path.display(),
                self.len() - 1,
                angle.to_degrees()
            )));
        }
        if angle > 0.0 {
            let c = Quat::from_axis_angle(axis * (1.0 / axis.norm()), angle);
            for p in &mut self.poses {
                p.quat = (Quat::from_array(p.quat) * c).normalize().to_array();
            }
        }
        Ok(angle)
    }
}

/// Reads one toss CSV. Every problem is an error naming the file and line:
/// a header without the [`REQUIRED_COLUMNS`], a row with the wrong number
/// of fields, a value that is not a finite number, time not increasing or
/// not uniformly sampled (within [`INTERVAL_TOLERANCE`]), a quaternion far
/// from unit norm, or fewer than `min_samples` samples.
pub fn load_toss(path: &Path, min_samples: usize) -> Result<Toss, SysidError> {
    let text = std::fs::read_to_string(path).map_err(|e| SysidError::Io { path: path.to_path_buf(), source: e })?;
    parse_toss(&text, path, 0, min_samples)
}

/// Parses toss CSV text (see [`load_toss`]); `path` names it in errors,
/// `index` becomes [`Toss::index`].
pub fn parse_toss(text: &str, path: &Path, index: usize, min_samples: usize) -> Result<Toss, SysidError> {
    let err = |line: usize, message: String| SysidError::Csv { path: path.to_path_buf(), line, message };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim().is_empty());
    let Some((hline, header)) = lines.next() else {
        return Err(err(1, "empty file: expected a header line".into()));
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let mut idx = [0usize; 8];
    for (slot, col) in idx.iter_mut().zip(REQUIRED_COLUMNS) {
        *slot = names.iter().position(|n| *n == col).ok_or_else(|| {
            err(
                hline,
                format!("header has no column '{col}' (expected {}; got '{header}')", REQUIRED_COLUMNS.join(",")),
            )
        })?;
    }
    let mut times: Vec<(usize, f64)> = vec![];
    let mut poses = vec![];
    for (n, line) in lines {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() != names.len() {
            return Err(err(n, format!("{} fields, the header has {}", fields.len(), names.len())));
        }
        let mut v = [0.0; 8];
        for ((out, &i), col) in v.iter_mut().zip(&idx).zip(REQUIRED_COLUMNS) {
            let x: f64 =
                fields[i].parse().map_err(|_| err(n, format!("column '{col}': '{}' is not a number", fields[i])))?;
            if !x.is_finite() {
                return Err(err(n, format!("column '{col}': {x} is not a finite number")));
            }
            *out = x;
        }
        if let Some(&(_, prev)) = times.last()
            && v[0] <= prev
        {
            return Err(err(n, format!("time {} s does not increase (previous sample {prev} s)", v[0])));
        }
        let q = Quat::from_array([v[4], v[5], v[6], v[7]]);
        let norm = q.norm();
        if (norm - 1.0).abs() > QUAT_NORM_TOLERANCE {
            return Err(err(n, format!("quaternion (qw, qx, qy, qz) has norm {norm:.6}, expected 1")));
        }
        times.push((n, v[0]));
        poses.push(Pose { pos: [v[1], v[2], v[3]], quat: q.normalize().to_array() });
    }
    if poses.len() < min_samples.max(3) {
        let last = times.last().map_or(hline, |&(n, _)| n);
        return Err(err(
            last,
            format!("{} samples, at least {} needed (file ends at this line)", poses.len(), min_samples.max(3)),
        ));
    }
    // Against the median interval, so that the odd interval is the one named.
    let mut intervals: Vec<f64> = times.windows(2).map(|w| w[1].1 - w[0].1).collect();
    intervals.sort_by(f64::total_cmp);
    let median = intervals[intervals.len() / 2];
    for w in times.windows(2) {
        let h = w[1].1 - w[0].1;
        if (h / median - 1.0).abs() > INTERVAL_TOLERANCE {
            return Err(err(
                w[1].0,
                format!(
                    "sample interval {h:.6} s differs from the toss's median {median:.6} s by more than {}% (dropped or repeated sample?)",
                    100.0 * INTERVAL_TOLERANCE
                ),
            ));
        }
    }
    let dt = (times[times.len() - 1].1 - times[0].1) / (times.len() - 1) as f64;
    Ok(Toss { path: path.to_path_buf(), index, dt, poses })
}

/// Reads every `*.csv` file of `dir` (sorted by name) with [`load_toss`].
/// Indices come from the number at the end of each file stem; when some
/// file has none, every toss gets its position in the sorted list.
pub fn load_dir(dir: &Path, min_samples: usize) -> Result<Vec<Toss>, SysidError> {
    let io = |e| SysidError::Io { path: dir.to_path_buf(), source: e };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io)?
        .into_iter()
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(SysidError::Input(format!("{}: no .csv files", dir.display())));
    }
    let numbers: Vec<Option<usize>> = paths.iter().map(|p| trailing_number(p)).collect();
    let numbered = numbers.iter().all(Option::is_some);
    let mut tosses = Vec::with_capacity(paths.len());
    for (i, (p, num)) in paths.iter().zip(numbers).enumerate() {
        let mut t = load_toss(p, min_samples)?;
        t.index = if numbered { num.unwrap_or(i) } else { i };
        tosses.push(t);
    }
    Ok(tosses)
}

/// The number at the end of a file stem (`toss_042` → 42).
fn trailing_number(p: &Path) -> Option<usize> {
    let stem = p.file_stem()?.to_str()?;
    let digits = stem.len() - stem.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    stem[stem.len() - digits..].parse().ok()
}

/// Parses an inclusive index range "A-B" (or a single index "A").
pub fn parse_range(s: &str) -> Result<RangeInclusive<usize>, String> {
    let bad = || format!("'{s}' is not a toss index range A-B (inclusive, e.g. 0-399)");
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?),
        None => {
            let a = s.trim().parse().map_err(|_| bad())?;
            (a, a)
        }
    };
    if a > b {
        return Err(format!("toss index range {s}: start after end"));
    }
    Ok(a..=b)
}

/// The tosses whose index lies in `range`.
pub fn select(tosses: &[Toss], range: &RangeInclusive<usize>) -> Vec<Toss> {
    tosses.iter().filter(|t| range.contains(&t.index)).cloned().collect()
}

/// A piece of a toss: `samples` consecutive samples from `start`; the
/// simulation starts at sample `start` and predicts the next `samples − 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Position of the toss in its slice.
    pub toss: usize,
    /// First sample.
    pub start: usize,
    /// Samples, the start included (≥ 2).
    pub samples: usize,
}

impl Segment {
    /// Predicted steps (`samples − 1`).
    pub fn steps(&self) -> usize {
        self.samples - 1
    }
}

/// All segments of `samples` samples whose start has a central-difference
/// velocity (start ≥ 1), every `stride` samples. Tosses too short for one
/// segment contribute none.
pub fn segments(tosses: &[Toss], samples: usize, stride: usize) -> Vec<Segment> {
    assert!(samples >= 2 && stride >= 1, "segments of {samples} samples with stride {stride}");
    let mut out = vec![];
    for (i, t) in tosses.iter().enumerate() {
        if t.len() < samples + 1 {
            continue;
        }
        for start in (1..=t.len() - samples).step_by(stride) {
            out.push(Segment { toss: i, start, samples });
        }
    }
    out
}
