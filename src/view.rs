//! Replay pages (`cenic view`): a self-contained HTML file that plays
//! trajectories of a model in a browser, with play/pause, a time slider,
//! speed, several worlds side by side or overlaid, and an orbit camera.
//!
//! The page carries everything it needs, so it opens without a network:
//! the model's visual geoms (primitives as three.js shapes in their body
//! frames, convex meshes and height fields as triangles, colours and plane
//! checkers as [`crate::render`] draws them), the body poses of every
//! track, `web/replay.js`, and three.js (the parts the page uses, vendored
//! from the npm registry by `scripts/vendor_three.sh` into
//! `web/vendor/three.bundle.min.js`, MIT license in
//! `web/vendor/three.LICENSE`).
//!
//! A [`Track`] is one world's trajectory: sample times and, per sample,
//! every body's world pose. Tracks come from a trajectory CSV of `cenic
//! run --out` ([`tracks_from_csv`], one track per world) or from
//! positions ([`Track::from_qpos`]).

use crate::dynamics::{Data, kinematics};
use crate::model::{GeomKind, Model};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// three.js, bundled (see the module docs).
const THREE: &str = include_str!("../web/vendor/three.bundle.min.js");
/// The page's template.
const TEMPLATE: &str = include_str!("../web/replay.html");
/// The page's script.
const SCRIPT: &str = include_str!("../web/replay.js");

/// How several tracks are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Each group of tracks ([`Track::group`]) in its own copy of the
    /// scene, in a row along x; within a group the tracks are overlaid,
    /// those after the group's first translucent.
    SideBySide,
    /// All tracks in one scene; tracks after the first are translucent.
    Overlay,
}

impl Layout {
    fn name(self) -> &'static str {
        match self {
            Layout::SideBySide => "side",
            Layout::Overlay => "overlay",
        }
    }
}

/// One world's trajectory: sample times (s, increasing) and per sample
/// every body's pose ((nbody × 7): position (m), quaternion w x y z; the
/// world body's included).
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    /// Shown name.
    pub label: String,
    /// Tracks with the same group are overlaid side by side with the other
    /// groups (e.g. a recorded and a simulated toss); `None`: a group of its own.
    pub group: Option<usize>,
    /// Sample times (s).
    pub times: Vec<f64>,
    /// (samples, nbody, 7) poses.
    pub poses: Vec<f64>,
}

impl Track {
    /// The track of positions `qpos` ((samples, nq)) at `times`: the poses
    /// from the model's kinematics.
    pub fn from_qpos(model: &Model, label: &str, times: &[f64], qpos: &[f64]) -> Result<Self, String> {
        let (nq, nb) = (model.nq, model.bodies.len());
        if qpos.len() != times.len() * nq {
            return Err(format!("{} positions for {} samples of nq = {nq}", qpos.len(), times.len()));
        }
        check_times(label, times)?;
        let mut data = Data::<f64>::new(model);
        let mut poses = Vec::with_capacity(times.len() * nb * 7);
        for q in qpos.chunks(nq.max(1)).take(times.len()) {
            if let Some(i) = q.iter().position(|x| !x.is_finite()) {
                return Err(format!("{label}: position {i} is not finite"));
            }
            data.q.copy_from_slice(&q[..nq]);
            kinematics(model, &mut data);
            for b in 0..nb {
                let (p, r) = (data.xpos[b], data.xquat[b]);
                poses.extend([p.x, p.y, p.z, r.w, r.x, r.y, r.z]);
            }
        }
        Ok(Self { label: label.to_string(), group: None, times: times.to_vec(), poses })
    }
}

fn check_times(label: &str, times: &[f64]) -> Result<(), String> {
    if times.is_empty() {
        return Err(format!("{label}: no samples"));
    }
    if let Some(i) = (1..times.len()).find(|&i| !(times[i] >= times[i - 1])) {
        return Err(format!("{label}: sample times decrease at sample {i} ({} after {} s)", times[i], times[i - 1]));
    }
    Ok(())
}

/// One world's rows of a trajectory CSV so far: sample times, poses, the
/// bodies seen in the last sample.
type WorldRows = (Vec<f64>, Vec<f64>, Vec<usize>);

/// The tracks of a trajectory CSV written by `cenic run --out` (header
/// [`crate::output::TRAJECTORY_HEADER`]) for `model`: one per world, in
/// world order, labelled `"{prefix}world {w}"`. Every moving body must
/// appear in every sample; errors name the line.
pub fn tracks_from_csv(model: &Model, text: &str, prefix: &str) -> Result<Vec<Track>, String> {
    let mut lines = text.lines().enumerate();
    let Some((_, header)) = lines.next() else { return Err("empty trajectory file".into()) };
    if header.trim() != crate::output::TRAJECTORY_HEADER {
        return Err(format!(
            "line 1: not a trajectory CSV of `cenic run --out` (expected the header {})",
            crate::output::TRAJECTORY_HEADER
        ));
    }
    let nb = model.bodies.len();
    let body_of = |label: &str| -> Option<usize> {
        match label.strip_prefix('#') {
            Some(i) => i.parse().ok().filter(|&i| i > 0 && i < nb),
            None => model.body_id(label),
        }
    };
    // world → (times, poses, bodies seen in the last sample), samples in file order.
    let mut worlds: BTreeMap<usize, WorldRows> = BTreeMap::new();
    for (i, line) in lines {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != 16 {
            return Err(format!("line {n}: {} fields, expected 16", f.len()));
        }
        let num = |k: usize| -> Result<f64, String> {
            f[k].trim().parse::<f64>().map_err(|_| format!("line {n}: field {} is not a number: '{}'", k + 1, f[k]))
        };
        let t = num(0)?;
        let w: usize = f[1].trim().parse().map_err(|_| format!("line {n}: world '{}' is not an index", f[1]))?;
        let b = body_of(f[2].trim())
            .ok_or_else(|| format!("line {n}: body '{}' is not a moving body of model '{}'", f[2], model.name))?;
        let pose = [num(3)?, num(4)?, num(5)?, num(6)?, num(7)?, num(8)?, num(9)?];
        let (times, poses, seen) = worlds.entry(w).or_default();
        if times.last() != Some(&t) || seen.contains(&b) {
            if let Some(missing) = (1..nb).find(|x| !times.is_empty() && !seen.contains(x)) {
                return Err(format!("line {n}: world {w} at t = {} s lacks body {missing}", times.last().unwrap()));
            }
            times.push(t);
            let mut world = vec![0.0; nb * 7];
            world[3] = 1.0;
            poses.extend(world);
            seen.clear();
        }
        let base = (times.len() - 1) * nb * 7 + b * 7;
        poses[base..base + 7].copy_from_slice(&pose);
        seen.push(b);
    }
    if worlds.is_empty() {
        return Err("the trajectory file has no samples".into());
    }
    let mut out = vec![];
    for (w, (times, poses, seen)) in worlds {
        if let Some(missing) = (1..nb).find(|x| !seen.contains(x)) {
            return Err(format!("world {w}: the last sample lacks body {missing}"));
        }
        let label = format!("{prefix}world {w}");
        check_times(&label, &times)?;
        out.push(Track { label, group: None, times, poses });
    }
    Ok(out)
}

/// The page's scene: the visual geoms, the model's centre and extent.
fn scene(model: &Model) -> Value {
    let mut data = Data::<f64>::new(model);
    data.q.copy_from_slice(&model.qpos0);
    kinematics(model, &mut data);
    let (center, extent) = model.statistic(&data);
    let geoms: Vec<Value> = (0..model.geoms.len())
        .filter(|&g| model.geom_visible(g))
        .map(|g| {
            let geom = &model.geoms[g];
            let look = model.geom_look(g);
            let mut v = json!({
                "kind": geom.kind.name(),
                "size": geom.size,
                "body": geom.body,
                "pos": geom.pos,
                "quat": geom.quat,
                "rgba": look.rgba,
                "checker": look.checker.map(|(c, r)| vec![c[0], c[1], c[2], r[0], r[1]]),
            });
            if matches!(geom.kind, GeomKind::Mesh | GeomKind::Hfield) {
                let tris = crate::render::geometry::geom_triangles(model, g);
                let verts: Vec<f32> = tris.iter().flat_map(|t| t.pos).collect();
                let faces: Vec<usize> = (0..tris.len()).collect();
                v["mesh"] = json!({ "v": verts, "f": faces });
            }
            v
        })
        .collect();
    json!({ "geoms": geoms, "nbody": model.bodies.len(), "center": center, "extent": extent })
}

/// The replay page of `tracks` of `model` (see the module docs), titled `title`.
pub fn replay_html(model: &Model, tracks: &[Track], layout: Layout, title: &str) -> Result<String, String> {
    let nb = model.bodies.len();
    if tracks.is_empty() {
        return Err("no trajectory to show".into());
    }
    for t in tracks {
        check_times(&t.label, &t.times)?;
        if t.poses.len() != t.times.len() * nb * 7 {
            return Err(format!(
                "{}: {} pose values for {} samples of {nb} bodies (expected samples × bodies × 7)",
                t.label,
                t.poses.len(),
                t.times.len()
            ));
        }
    }
    let mut data = scene(model);
    data["layout"] = json!(layout.name());
    data["title"] = json!(title);
    // Poses in single precision (enough for a picture, half the page).
    // Groups numbered 0, 1, … in order of first appearance.
    let mut groups: Vec<(bool, usize)> = vec![];
    data["tracks"] = tracks
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let key = t.group.map_or((false, k), |g| (true, g));
            let group = groups.iter().position(|&g| g == key).unwrap_or_else(|| {
                groups.push(key);
                groups.len() - 1
            });
            let poses: Vec<f32> = t.poses.iter().map(|&x| x as f32).collect();
            json!({ "label": t.label, "group": group, "times": t.times, "poses": poses })
        })
        .collect();
    // JSON inside <script>: no "</" may end the element early.
    let json = serde_json::to_string(&data).map_err(|e| e.to_string())?.replace("</", "<\\/");
    let escaped_title = title.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    Ok(fill(
        TEMPLATE,
        &[
            ("/*CENIC_TITLE*/", &escaped_title),
            ("/*CENIC_THREE*/", THREE),
            ("/*CENIC_DATA*/", &json),
            ("/*CENIC_REPLAY*/", SCRIPT),
        ],
    ))
}

/// The template with each placeholder replaced (one pass: inserted text is not searched).
fn fill(template: &str, parts: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + parts.iter().map(|p| p.1.len()).sum::<usize>());
    let mut rest = template;
    loop {
        let next = parts.iter().filter_map(|(k, v)| rest.find(k).map(|i| (i, *k, *v))).min_by_key(|x| x.0);
        match next {
            Some((i, k, v)) => {
                out.push_str(&rest[..i]);
                out.push_str(v);
                rest = &rest[i + k.len()..];
            }
            None => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trip_and_errors() {
        let model = std::sync::Arc::new(crate::scenes::cube_toss());
        let path = std::env::temp_dir().join(format!("cenic_view_test_{}.csv", std::process::id()));
        let mut w = crate::output::TrajectoryWriter::create(&path, model.clone()).unwrap();
        let (nq, nv) = (model.nq, model.nv);
        let mut q = model.qpos0.clone();
        q.extend(model.qpos0.iter().copied());
        q[nq] += 1.0; // world 1 one metre along x
        for k in 0..3 {
            q[2] = 0.5 + 0.1 * k as f64;
            w.write_batch(&[0.1 * k as f64; 2], &q, &vec![0.0; 2 * nv]).unwrap();
        }
        w.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let tracks = tracks_from_csv(&model, &text, "").unwrap();
        assert_eq!(tracks.len(), 2);
        assert_eq!(tracks[0].times, vec![0.0, 0.1, 0.2]);
        let nb = model.bodies.len();
        let z = |t: &Track, s: usize| t.poses[s * nb * 7 + 7 + 2];
        assert!((z(&tracks[0], 2) - 0.7).abs() < 1e-12);
        let x = |t: &Track| t.poses[7];
        assert!((x(&tracks[1]) - x(&tracks[0]) - 1.0).abs() < 1e-12);
        let html = replay_html(&model, &tracks, Layout::Overlay, "toss").unwrap();
        assert!(html.contains("\"layout\":\"overlay\"") && html.contains("var THREE="));
        assert!(!html.contains("/*CENIC_"));

        let bad = text.replacen(",cube,", ",nobody,", 1);
        let e = tracks_from_csv(&model, &bad, "").unwrap_err();
        assert!(e.starts_with("line 2:") && e.contains("nobody"), "{e}");
        let e = tracks_from_csv(&model, "t,x\n", "").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }
}
