//! The accuracy of the kernels' elementary functions on the adapter at hand
//! (`kernels/common.wgsl`: `sin_cos`, `atan2_accurate`), against f64 on the
//! same f32 inputs, beside the WGSL builtins they replace.
//!
//! Vulkan asks little of the builtins (sin and cos: 2^-11 absolute on
//! [-π, π]; atan: 4096 ulp), and on NVIDIA's driver (the special-function
//! unit) the sine of a 1e-3 rad angle is off by ~1e-4 relative: enough to
//! break CPU parity of a rotation increment or of the CENIC error estimate
//! (seen on an H200, BENCHMARKS.md "H200: kernel arithmetic, layout and collision threshold"). The
//! replacements must hold a few ulp everywhere; the builtins' errors are
//! printed, not asserted (they are the driver's).

#[macro_use]
mod common;

use std::sync::Arc;

/// Outputs per input pair (x, y): builtin sin x, cos x, ours sin x, cos x,
/// builtin atan2(x, y), ours atan2(x, y), and quat_exp's w and x of the
/// rotation vector (x, 0, 0).
const NOUT: usize = 8;

const SHADER: &str = r#"
@group(0) @binding(0) var<storage, read> xs: array<vec2f>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
    let i = g.x;
    if (i >= arrayLength(&xs)) {
        return;
    }
    let x = xs[i].x;
    let y = xs[i].y;
    let sc = sin_cos(x);
    let q = quat_exp(vec3f(x, 0.0, 0.0));
    let o = i * 8u;
    out[o] = sin(x);
    out[o + 1u] = cos(x);
    out[o + 2u] = sc.x;
    out[o + 3u] = sc.y;
    out[o + 4u] = atan2(x, y);
    out[o + 5u] = atan2_accurate(x, y);
    out[o + 6u] = q.x;
    out[o + 7u] = q.y;
}
"#;

/// Runs the shader on `inputs` ((x, y) pairs); returns NOUT values per pair.
fn run(ctx: &cenic::gpu::GpuContext, inputs: &[[f32; 2]]) -> Vec<f32> {
    use cenic::gpu::wgpu;
    use wgpu::util::DeviceExt;
    let device = &ctx.device;
    let source = format!("{}\n{SHADER}", cenic::gpu::shaders::COMMON);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("gpu_math"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("gpu_math"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let xs = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("xs"),
        contents: bytemuck::cast_slice(inputs),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let bytes = (inputs.len() * NOUT * 4) as u64;
    let out = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("out"),
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("gpu_math"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry { binding: 0, resource: xs.as_entire_binding() },
            wgpu::BindGroupEntry { binding: 1, resource: out.as_entire_binding() },
        ],
    });
    cenic::gpu::context::run_pass(ctx, "gpu_math", |pass| {
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups((inputs.len() as u32).div_ceil(64), 1, 1);
    })
    .unwrap();
    let mut result = vec![0u8; bytes as usize];
    cenic::gpu::Readback::new(ctx, bytes).read_parts(ctx, "gpu_math", |_| {}, &mut [(&out, 0, &mut result)]).unwrap();
    bytemuck::cast_slice(&result).to_vec()
}

/// One unit in the last place of an f32 of magnitude |v|.
fn ulp(v: f64) -> f64 {
    let a = (v.abs() as f32).max(f32::MIN_POSITIVE);
    (f32::from_bits(a.to_bits() + 1) - a) as f64
}

/// Largest error in ulps (of the reference, with `floor` as an absolute
/// allowance near zeros) and largest relative error, over one column.
#[derive(Default, Debug, Clone, Copy)]
struct Accuracy {
    ulps: f64,
    rel: f64,
    abs: f64,
}

/// `floor(i)`: the absolute allowance of element i.
fn measure(got: impl Iterator<Item = (f32, f64)>, floor: impl Fn(usize) -> f64) -> Accuracy {
    let mut e = Accuracy::default();
    for (i, (g, r)) in got.enumerate() {
        let d = (g as f64 - r).abs();
        let floor = floor(i);
        assert!(g.is_finite(), "non-finite result for reference {r}");
        e.ulps = e.ulps.max((d - floor).max(0.0) / ulp(r));
        e.rel = e.rel.max(if r != 0.0 { d / r.abs() } else { d });
        e.abs = e.abs.max(d);
    }
    e
}

#[test]
fn kernel_sin_cos_atan2_and_quat_exp_hold_a_few_ulp_where_builtins_may_not() {
    let ctx: Arc<cenic::gpu::GpuContext> = gpu_or_skip!();
    let mut rng = common::Rng::new(5);
    // (name, inputs): small angles log-spaced (relative accuracy matters:
    // rotation increments, error estimates), one turn, and large arguments.
    let mut sets: Vec<(&str, Vec<[f32; 2]>)> = vec![];
    let small: Vec<[f32; 2]> = (0..4000)
        .map(|i| {
            let x = 10f64.powf(-6.0 + 5.0 * i as f64 / 4000.0) as f32;
            // atan2 of a small angle as CENIC's error estimate forms it: (s, c ≈ 1).
            [if i % 2 == 0 { x } else { -x }, 1.0]
        })
        .collect();
    sets.push(("small angles 1e-6..0.1 rad", small));
    sets.push((
        "one turn [-π, π]",
        (0..4000).map(|_| [rng.range(-3.2, 3.2) as f32, rng.range(-1.0, 1.0) as f32]).collect(),
    ));
    sets.push((
        "large [-200, 200]",
        (0..4000).map(|_| [rng.range(-200.0, 200.0) as f32, rng.range(-50.0, 50.0) as f32]).collect(),
    ));
    eprintln!("adapter: {}", ctx.describe());
    for (name, inputs) in &sets {
        let out = run(&ctx, inputs);
        let col = |k: usize| (0..inputs.len()).map(|i| out[i * NOUT + k]).collect::<Vec<f32>>();
        let xs: Vec<f64> = inputs.iter().map(|p| p[0] as f64).collect();
        let sin_ref: Vec<f64> = xs.iter().map(|x| x.sin()).collect();
        let cos_ref: Vec<f64> = xs.iter().map(|x| x.cos()).collect();
        let at_ref: Vec<f64> = inputs.iter().map(|p| (p[0] as f64).atan2(p[1] as f64)).collect();
        let qw_ref: Vec<f64> = xs.iter().map(|x| (0.5 * x).cos()).collect();
        let qx_ref: Vec<f64> = xs.iter().map(|x| (0.5 * x).sin()).collect();
        let z = |c: Vec<f32>, r: &[f64]| c.into_iter().zip(r.iter().copied()).collect::<Vec<_>>();
        let b_sin = measure(z(col(0), &sin_ref).into_iter(), |_| 0.0);
        let b_cos = measure(z(col(1), &cos_ref).into_iter(), |_| 0.0);
        let o_sin = measure(z(col(2), &sin_ref).into_iter(), |_| 0.0);
        let o_cos = measure(z(col(3), &cos_ref).into_iter(), |_| 0.0);
        let b_at = measure(z(col(4), &at_ref).into_iter(), |_| 0.0);
        let o_at = measure(z(col(5), &at_ref).into_iter(), |_| 0.0);
        // quat_exp forms θ = sqrt(x·x): two roundings of x, worth up to
        // |x|·2^-23 in θ and half that in the half angle, which cos(θ/2)
        // and sin(θ/2) pass on in full near their zeros (the floor). The x
        // component, sin(θ/2)/θ · x, is a chain of four operations: one ulp
        // more. (Seen on an H200: 4096 ulp in w at θ ≈ π, 16383 ulp in x
        // at θ ≈ 2π·k, both from θ alone.)
        let theta = |i: usize| (inputs[i][0] as f64).abs() * 2f64.powi(-23);
        let o_qw = measure(z(col(6), &qw_ref).into_iter(), theta);
        let o_qx = measure(z(col(7), &qx_ref).into_iter(), |i| theta(i) + ulp(qx_ref[i]));
        eprintln!(
            "{name}: builtin sin {:.1} ulp (rel {:.1e}), cos {:.1} ulp (abs {:.1e}), atan2 {:.1} ulp (rel {:.1e}); \
             ours sin {:.1} ulp, cos {:.1} ulp, atan2 {:.1} ulp, quat_exp w {:.1} ulp, x {:.1} ulp",
            b_sin.ulps,
            b_sin.rel,
            b_cos.ulps,
            b_cos.abs,
            b_at.ulps,
            b_at.rel,
            o_sin.ulps,
            o_cos.ulps,
            o_at.ulps,
            o_qw.ulps,
            o_qx.ulps
        );
        // Near the zeros of sin and cos at large arguments the reduction's
        // own error (≈ |k|·1e-15 rad) is an absolute floor.
        let floor = if name.starts_with("large") { 2e-13 } else { 0.0 };
        for (what, e) in [("sin", o_sin), ("cos", o_cos), ("atan2", o_at), ("quat_exp w", o_qw), ("quat_exp x", o_qx)] {
            let e = if floor > 0.0 && (what == "sin" || what == "cos") {
                let (k, r) = if what == "sin" { (2, &sin_ref) } else { (3, &cos_ref) };
                measure(z(col(k), r).into_iter(), |_| floor)
            } else {
                e
            };
            assert!(e.ulps <= 4.0, "{name}: kernel {what} is off by {:.1} ulp (rel {:.1e})", e.ulps, e.rel);
        }
    }
}
