//! `GpuBatch::sensordata` (`kernels/sensors.wgsl`) against the CPU twin
//! (`dynamics::sensors` through `CpuBatch<f32>`), on lavapipe in CI
//! (`CENIC_REQUIRE_GPU=1` makes a missing adapter fail; otherwise these
//! tests skip).
//!
//! Two comparisons separate the sensor kernel from the (f32, differently
//! rounded) trajectories of the two batches:
//! - State sensors (everything but accelerometers and touch sensors, which
//!   read the last step): several worlds stepped on the GPU with different
//!   controls (fixed steps and error control, both per-world layouts); each
//!   GPU state (q, v, controls) is then copied into a CPU f32 world, which
//!   evaluates its sensors there. Same formulas, same f32 inputs: they
//!   differ by rounding only (operation order, the GPU's fused
//!   multiply-adds), a few ulps of the largest intermediate term. Bound
//!   `TOL_STATE` = 2e-5·(1 + |value|); measured (printed) ≤ 6e-7.
//! - Step sensors (all, accelerometers and touch sensors included): both
//!   batches start from the same states and controls and take one fixed
//!   1 ms step, or advance 2 ms under error control (the same steps on
//!   both, checked). Their solves agree to the Newton tolerance, not to
//!   rounding: each stops within 1e-6·max(1, ‖Dr‖) of its own minimiser, so
//!   v₁ differs by ~1e-7 m/s here (up to 5e-4 on the small cubes of
//!   `gpu_batch.rs`), and accelerometers, reading (v₁ − v₀)/h, by that over
//!   h. Measured (printed): accelerometers ≤ 1.5e-4 m/s² after a fixed step,
//!   ≤ 7e-3 m/s² under error control (the state after 2 ms also differs,
//!   others ≤ 2e-5·(1 + |value|)); touch sensors ≤ 6e-5 N of ~20 N.
//!   Bounds: `TOL_ACC_ABS` + `TOL_ACC_REL`·|a| = 0.05 m/s² + 1e-3·|a| on
//!   accelerometers (a missing gravity, centripetal, Coriolis or α × r term,
//!   or a wrong frame, is ≥ 0.1 m/s² in these states); touch sensors within
//!   2e-3 of the largest contact force plus 1e-3 N (as `rl_gpu.rs` for
//!   contact wrenches); the others `TOL_STEP` = 1e-4·(1 + |value|).
//!
//! Independent of the CPU: a box resting on the floor weighs m·g on its
//! touch sensor and its accelerometer reads g upward, while one in free
//! fall reads zero.

#[macro_use]
mod common;

use cenic::batch::{Batch, CpuBatch};
use cenic::gpu::{GpuBatch, GpuBatchOptions, GpuContext, Layout};
use cenic::integrator::{CenicParams, Mode};
use cenic::model::{Model, SensorKind};
use common::Rng;
use std::sync::Arc;

const TOL_STATE: f64 = 2e-5;
const TOL_STEP: f64 = 1e-4;
const TOL_ACC_ABS: f64 = 0.05;
const TOL_ACC_REL: f64 = 1e-3;

fn model_path(rel: &str) -> String {
    format!("{}/tests/models/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// `features/sensors.xml` as the GPU simulates it: its tendon-driven
/// general actuator (a `velocity` servo) becomes a motor on the shoulder;
/// more frames, references and site shapes are read.
fn sensors_model() -> Arc<Model> {
    let xml = std::fs::read_to_string(model_path("features/sensors.xml")).unwrap();
    let xml = xml
        .replace(
            r#"<velocity name="vel" tendon="sum" kv="0.4"/>"#,
            r#"<motor name="vel" joint="shoulder" gear="0.5" forcerange="-0.3 0.3"/>"#,
        )
        .replace(
            r#"<site name="imu" "#,
            r#"<site name="pad" type="ellipsoid" size="0.16 0.13 0.12"/>
      <site name="imu" "#,
        )
        .replace(
            r#"<site name="sole" "#,
            r#"<site name="centre"/>
      <site name="sole" "#,
        )
        .replace(
            "<magnetometer",
            r#"<frameyaxis objtype="geom" objname="forearm" reftype="site" refname="hand"/>
    <framexaxis objtype="xbody" objname="upper" reftype="geom" refname="forearm"/>
    <framepos objtype="xbody" objname="lower" reftype="body" refname="upper"/>
    <framequat objtype="site" objname="imu" reftype="xbody" refname="lower"/>
    <framelinvel objtype="xbody" objname="upper"/>
    <framelinvel objtype="body" objname="box"/>
    <frameangvel objtype="geom" objname="forearm"/>
    <subtreecom body="upper"/>
    <subtreecom body="world"/>
    <velocimeter site="imu" cutoff="0.5"/>
    <gyro site="hand"/>
    <touch site="pad"/>
    <accelerometer site="centre"/>
    <magnetometer"#,
        );
    let m = Model::from_mjcf_str(&xml).unwrap();
    assert!(m.gpu_unsupported().is_none(), "{:?}", m.gpu_unsupported());
    Arc::new(m)
}

fn ctrls(model: &Model, nworld: usize, rng: &mut Rng) -> Vec<f64> {
    (0..nworld * model.nu()).map(|_| rng.range(-1.0, 1.0)).collect()
}

fn sensordata(b: &dyn Batch) -> Vec<f64> {
    let mut out = vec![f64::NAN; b.nworld() * b.model().nsensordata];
    b.sensordata(&mut out).unwrap();
    out
}

/// Whether a sensor reads the last step (not only the state and controls).
fn reads_step(kind: &SensorKind) -> bool {
    matches!(kind, SensorKind::Accelerometer(_) | SensorKind::Touch(_))
}

/// Compares the sensors `pick` selects, value by value: NaN in both for
/// unsupported types, else within `tol(kind, value)`. Returns the largest
/// error relative to 1 + |value| (accelerometers and touch sensors: absolute).
fn compare(
    what: &str,
    model: &Model,
    gpu: &[f64],
    cpu: &[f64],
    pick: impl Fn(&SensorKind) -> bool,
    tol: impl Fn(&SensorKind, f64, f64) -> f64,
) -> f64 {
    let ns = model.nsensordata;
    let mut worst = 0.0f64;
    for w in 0..gpu.len() / ns {
        // Largest touch reading of this world (the scale of contact forces).
        let fmax = model
            .sensors
            .iter()
            .filter(|s| matches!(s.kind, SensorKind::Touch(_)))
            .map(|s| cpu[w * ns + s.adr].abs())
            .fold(0.0, f64::max);
        for s in model.sensors.iter().filter(|s| pick(&s.kind)) {
            for k in 0..s.kind.dim() {
                let (a, b) = (gpu[w * ns + s.adr + k], cpu[w * ns + s.adr + k]);
                let name = format!("{what}, world {w}: sensor '{}' ({}) [{k}]", s.name, s.kind.name());
                if let SensorKind::Unsupported { .. } = s.kind {
                    assert!(a.is_nan() && b.is_nan(), "{name}: GPU {a}, CPU {b} (NaN in both)");
                    continue;
                }
                let bound = tol(&s.kind, b, fmax);
                assert!((a - b).abs() <= bound, "{name}: GPU {a}, CPU f32 {b} (bound {bound:.3e})");
                let scale = if reads_step(&s.kind) { 1.0 } else { 1.0 + b.abs() };
                worst = worst.max((a - b).abs() / scale);
            }
        }
    }
    worst
}

/// Each GPU world's state and controls copied into CPU f32 world, whose
/// sensors are evaluated there.
fn cpu_at(model: &Arc<Model>, q: &[f64], v: &[f64], ctrl: &[f64]) -> Vec<f64> {
    let (nq, nv, nu) = (model.nq, model.nv, model.nu());
    let n = q.len() / nq;
    let mut cpu = CpuBatch::<f32>::new(model.clone(), n, Mode::Fixed { dt: 1e-3 });
    for w in 0..n {
        cpu.set_state(w, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv]).unwrap();
        cpu.set_ctrl(w, &ctrl[w * nu..(w + 1) * nu]).unwrap();
        cpu.world_mut(w).sim.compute_sensors();
    }
    sensordata(&cpu)
}

/// State sensors of `nworld` worlds stepped on the GPU with different
/// controls (three control periods), against the CPU at the GPU's states.
fn state_parity(ctx: Arc<GpuContext>, model: &Arc<Model>, mode: Mode, layout: Layout, what: &str) -> f64 {
    let nworld = 4;
    let mut gpu =
        GpuBatch::with_options(ctx, model.clone(), nworld, mode, GpuBatchOptions { layout, ..Default::default() })
            .unwrap();
    let mut rng = Rng::new(7);
    for w in 0..nworld {
        let v: Vec<f64> = (0..model.nv).map(|_| 0.5 * rng.normal()).collect();
        gpu.set_state(w, &model.qpos0, &v).unwrap();
    }
    let mut worst = 0.0f64;
    for round in 0..3 {
        let ctrl = ctrls(model, nworld, &mut rng);
        gpu.set_ctrl_all(&ctrl).unwrap();
        gpu.advance(0.05).unwrap();
        let (q, v) = common::batch_state(&gpu);
        let g = sensordata(&gpu);
        let c = cpu_at(model, &q, &v, &ctrl);
        let tol = |_: &SensorKind, b: f64, _| TOL_STATE * (1.0 + b.abs());
        let e = compare(&format!("{what}, round {round}"), model, &g, &c, |k| !reads_step(k), tol);
        worst = worst.max(e);
    }
    worst
}

#[test]
fn state_sensors_match_cpu_at_gpu_states() {
    let ctx = gpu_or_skip!();
    let model = sensors_model();
    let mut worst = 0.0f64;
    for layout in [Layout::FieldMajor, Layout::WorldMajor] {
        for mode in [Mode::Fixed { dt: 2e-3 }, Mode::ErrorControlled(CenicParams::default())] {
            let what = format!("{layout:?} {}", if matches!(mode, Mode::Fixed { .. }) { "fixed" } else { "cenic" });
            worst = worst.max(state_parity(ctx.clone(), &model, mode, layout, &what));
        }
    }
    eprintln!("state sensors: largest |GPU − CPU f32| / (1 + |value|) = {worst:.2e} (bound {TOL_STATE:.0e})");
}

/// Different states of the sensors model (f64 CPU runs): worlds 0 and 1
/// 0.1 s after random velocities (torso falling, arm swinging, box resting
/// on the floor), worlds 2 and 3 settled after 1.5 s (torso and box on the floor).
fn varied_states(model: &Arc<Model>, rng: &mut Rng) -> (Vec<f64>, Vec<f64>) {
    let mut run = |nworld: usize, t: f64| {
        let mut b = CpuBatch::<f64>::new(model.clone(), nworld, Mode::ErrorControlled(CenicParams::default()));
        for w in 0..nworld {
            let v: Vec<f64> = (0..model.nv).map(|_| 0.3 * rng.normal()).collect();
            b.set_state(w, &model.qpos0, &v).unwrap();
        }
        b.set_ctrl_all(&ctrls(model, nworld, rng)).unwrap();
        b.advance(t).unwrap();
        common::batch_state(&b)
    };
    let (mut q, mut v) = run(2, 0.1);
    let (qs, vs) = run(2, 1.5);
    q.extend(qs);
    v.extend(vs);
    (q, v)
}

fn set_states(b: &mut dyn Batch, q: &[f64], v: &[f64]) {
    let (nq, nv) = (b.model().nq, b.model().nv);
    for w in 0..b.nworld() {
        b.set_state(w, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv]).unwrap();
    }
}

/// The same states and controls on both batches, one advance (a fixed 1 ms
/// step; 2 ms under error control, the same steps on both): every sensor,
/// accelerometers (from the last step's velocity change: under error
/// control the second half step's) and touch sensors included.
#[test]
fn all_sensors_match_cpu_after_a_step() {
    let ctx = gpu_or_skip!();
    let model = sensors_model();
    let nworld = 4;
    let mut rng = Rng::new(11);
    let (q, v) = varied_states(&model, &mut rng);
    let ctrl = ctrls(&model, nworld, &mut rng);
    let tol = |k: &SensorKind, b: f64, fmax: f64| match k {
        SensorKind::Accelerometer(_) => TOL_ACC_ABS + TOL_ACC_REL * b.abs(),
        SensorKind::Touch(_) => 2e-3 * fmax + 1e-3,
        _ => TOL_STEP * (1.0 + b.abs()),
    };
    for (mode, dt) in [(Mode::Fixed { dt: 1e-3 }, 1e-3), (Mode::ErrorControlled(CenicParams::default()), 2e-3)] {
        let what = if dt == 1e-3 { "one fixed step" } else { "error control" };
        let mut gpu = GpuBatch::new(ctx.clone(), model.clone(), nworld, mode.clone()).unwrap();
        let mut cpu = CpuBatch::<f32>::new(model.clone(), nworld, mode);
        for b in [&mut gpu as &mut dyn Batch, &mut cpu] {
            set_states(b, &q, &v);
            b.set_ctrl_all(&ctrl).unwrap();
            b.advance(dt).unwrap();
        }
        for w in 0..nworld {
            let (a, b) = (gpu.stats(w), cpu.stats(w));
            assert_eq!((a.accepted, a.rejected), (b.accepted, b.rejected), "{what}, world {w}: the same steps");
        }
        let (g, c) = (sensordata(&gpu), sensordata(&cpu));
        let acc = compare(what, &model, &g, &c, |k| matches!(k, SensorKind::Accelerometer(_)), tol);
        let touch = compare(what, &model, &g, &c, |k| matches!(k, SensorKind::Touch(_)), tol);
        let rest = compare(what, &model, &g, &c, |k| !reads_step(k), tol);
        eprintln!(
            "{what}: accelerometers |GPU − CPU f32| ≤ {acc:.2e} m/s², touch ≤ {touch:.2e} N, others ≤ {rest:.2e}·(1 + |value|)"
        );
        // Every touch sensor reads a force somewhere (the comparisons are not of zeros).
        for s in model.sensors.iter().filter(|s| matches!(s.kind, SensorKind::Touch(_))) {
            let most = (0..nworld).map(|w| g[w * model.nsensordata + s.adr]).fold(0.0, f64::max);
            assert!(most > 1.0, "{what}: touch sensor on site {:?} reads {most} N in every world", s.kind);
        }
    }
}

fn sensor_value<'a>(model: &Model, data: &'a [f64], w: usize, pick: impl Fn(&SensorKind) -> bool) -> &'a [f64] {
    let s = model.sensors.iter().find(|s| pick(&s.kind)).unwrap();
    let at = w * model.nsensordata + s.adr;
    &data[at..at + s.kind.dim()]
}

/// Against physics, not the CPU: the box resting on the floor weighs
/// m·g = 19.62 N on its sole's touch sensor, and its centre's
/// accelerometer reads g upward (the support's push); the torso in free
/// fall (zero velocity, servo at its target: no internal forces) reads zero
/// acceleration at its IMU, under fixed steps and error control.
#[test]
fn touch_and_accelerometers_read_weight_and_free_fall() {
    let ctx = gpu_or_skip!();
    let model = sensors_model();
    let g = 9.81;
    let is_site = |site: &str| {
        let s = model.sites.iter().position(|x| x.name == site).unwrap();
        move |k: &SensorKind| matches!(k, SensorKind::Accelerometer(x) | SensorKind::Touch(x) if *x == s)
    };
    for mode in [Mode::Fixed { dt: 1e-3 }, Mode::ErrorControlled(CenicParams::default())] {
        let mut gpu = GpuBatch::new(ctx.clone(), model.clone(), 1, mode.clone()).unwrap();
        gpu.advance(0.05).unwrap();
        let d = sensordata(&gpu);
        let imu = sensor_value(&model, &d, 0, is_site("imu"));
        let fall = imu.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!(fall < 1e-3 * g, "{mode:?}: the falling torso's accelerometer reads {imu:?}");
        let weight = sensor_value(&model, &d, 0, is_site("sole"))[0];
        assert!((weight - 2.0 * g).abs() < 0.01 * 2.0 * g, "{mode:?}: touch {weight} N, m·g = {} N", 2.0 * g);
        let up = sensor_value(&model, &d, 0, is_site("centre"));
        assert!(
            up[0].abs() < 0.01 * g && up[1].abs() < 0.01 * g && (up[2] - g).abs() < 0.01 * g,
            "{mode:?}: resting box reads {up:?}"
        );
    }
}

/// After `reset_world` the CPU batch evaluates its sensors at the new state
/// with zero controls, no contacts and no step (zero acceleration); the GPU
/// reads the same, accelerometers and touch sensors included.
#[test]
fn sensors_after_reset_match_cpu() {
    let ctx = gpu_or_skip!();
    let model = sensors_model();
    let nworld = 4;
    let mut rng = Rng::new(3);
    let (q, v) = varied_states(&model, &mut rng);
    let mut gpu = GpuBatch::new(ctx, model.clone(), nworld, Mode::Fixed { dt: 1e-3 }).unwrap();
    let mut cpu = CpuBatch::<f32>::new(model.clone(), nworld, Mode::Fixed { dt: 1e-3 });
    let (nq, nv) = (model.nq, model.nv);
    for b in [&mut gpu as &mut dyn Batch, &mut cpu] {
        // A step first, so that the reset has a solve and controls to forget.
        set_states(b, &q, &v);
        b.set_ctrl_all(&ctrls(&model, nworld, &mut Rng::new(4))).unwrap();
        b.advance(1e-3).unwrap();
        for w in 0..nworld {
            b.reset_world(w, &q[w * nq..(w + 1) * nq], &v[w * nv..(w + 1) * nv]).unwrap();
        }
    }
    let (g, c) = (sensordata(&gpu), sensordata(&cpu));
    let tol = |_: &SensorKind, b: f64, _| TOL_STATE * (1.0 + b.abs());
    compare("after reset_world", &model, &g, &c, |_| true, tol);
    let touch = sensor_value(&model, &g, 2, |k| matches!(k, SensorKind::Touch(_)))[0];
    assert_eq!(touch, 0.0, "no contact forces after a reset");
}

/// The corpus models (public control-benchmark style) that the GPU
/// simulates (cartpole, pendulum, walker; the others use general
/// actuators, friction loss, equality constraints or fluid forces): their
/// sensors at GPU states match the CPU's.
#[test]
fn corpus_model_sensors_match_cpu() {
    let ctx = gpu_or_skip!();
    let mut ran = vec![];
    for name in ["acrobot", "cartpole", "cheetah", "finger", "manipulator", "pendulum", "swimmer", "walker", "lander"] {
        let model = Arc::new(Model::from_mjcf_file(model_path(&format!("corpus/{name}.xml"))).unwrap());
        if let Some(why) = model.gpu_unsupported() {
            eprintln!("{name}: not simulated on the GPU ({why})");
            continue;
        }
        let worst =
            state_parity(ctx.clone(), &model, Mode::Fixed { dt: model.options.timestep }, Layout::default(), name);
        eprintln!("{name}: {} sensors, largest state-sensor error {worst:.2e}", model.sensors.len());
        ran.push(name);
    }
    assert_eq!(ran, ["cartpole", "pendulum", "walker"], "corpus models compared");
}

/// The `sensor` flag off: every value zero, as on the CPU.
#[test]
fn sensor_flag_off_reads_zeros() {
    let ctx = gpu_or_skip!();
    let path = model_path("corpus/pendulum.xml");
    let xml = std::fs::read_to_string(&path).unwrap();
    let xml = xml.replacen("<worldbody>", r#"<option><flag sensor="disable"/></option><worldbody>"#, 1);
    let model = Arc::new(Model::from_mjcf_str_named(&xml, &path).unwrap());
    assert!(model.nsensordata > 0 && !model.options.flags.sensor);
    let mut gpu = GpuBatch::new(ctx, model.clone(), 2, Mode::Fixed { dt: 1e-3 }).unwrap();
    gpu.set_state(1, &model.qpos0.iter().map(|x| x + 0.3).collect::<Vec<_>>(), &vec![1.0; model.nv]).unwrap();
    gpu.advance(0.01).unwrap();
    assert!(sensordata(&gpu).iter().all(|x| *x == 0.0));
}

/// A sensor the GPU cannot evaluate (a spatial tendon's length) does not
/// stop the batch from being created or stepped; reading the sensors fails
/// with an error naming the sensor, its kind and the tendon, while the CPU
/// batch reads them.
#[test]
fn unsupported_sensor_is_named() {
    let ctx = gpu_or_skip!();
    let xml = r#"<mujoco>
      <worldbody>
        <site name="anchor" pos="0 0 1"/>
        <body name="ball" pos="0 0 0.5">
          <freejoint/>
          <geom type="sphere" size="0.05"/>
          <site name="knot"/>
        </body>
      </worldbody>
      <tendon><spatial name="string"><site site="anchor"/><site site="knot"/></spatial></tendon>
      <sensor>
        <framepos name="where" objtype="site" objname="knot"/>
        <tendonpos name="length" tendon="string"/>
      </sensor>
    </mujoco>"#;
    let model = Arc::new(Model::from_mjcf_str(xml).unwrap());
    let mut gpu = GpuBatch::new(ctx, model.clone(), 2, Mode::Fixed { dt: 1e-3 }).unwrap();
    gpu.advance(0.01).unwrap();
    let mut out = vec![0.0; 2 * model.nsensordata];
    let e = gpu.sensordata(&mut out).unwrap_err().to_string();
    for part in ["'length'", "tendonpos", "spatial tendon 'string'", "CpuBatch"] {
        assert!(e.contains(part), "error lacks {part}: {e}");
    }
    let mut cpu = CpuBatch::<f32>::new(model.clone(), 2, Mode::Fixed { dt: 1e-3 });
    cpu.advance(0.01).unwrap();
    cpu.sensordata(&mut out).unwrap();
    assert!((out[3] - 0.5).abs() < 0.01, "CPU tendon length {}", out[3]);
    // A wrong length is refused before anything else.
    assert!(gpu.sensordata(&mut [0.0; 3]).unwrap_err().to_string().contains("sensordata"));
}

/// One submission and one host wait per read once the advance is settled,
/// nothing else; repeated reads give the same values.
#[test]
fn one_wait_per_read() {
    let _ = gpu_or_skip!();
    let ctx = Arc::new(GpuContext::new().unwrap());
    let model = sensors_model();
    let mut gpu = GpuBatch::new(ctx.clone(), model.clone(), 8, Mode::Fixed { dt: 1e-3 }).unwrap();
    gpu.advance(0.01).unwrap();
    gpu.times();
    let before = ctx.counters();
    let a = sensordata(&gpu);
    let d = ctx.counters() - before;
    assert_eq!((d.waits, d.submissions), (1, 1), "{d:?}");
    assert_eq!(d.bytes_read, (8 * model.nsensordata * 4) as u64);
    let b = sensordata(&gpu);
    assert_eq!(a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), b.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
}
