//! `asset/hfield`: height fields, as MuJoCo 4.0 reads them.
//! - `nrow`, `ncol` with `elevation` (nrow·ncol numbers written from the
//!   top row, +y, down: MuJoCo flips them so that row 0 is at −y), or
//!   without it (a flat field of zeros);
//! - or `file`: a PNG image (grey levels, or the red channel of a colour
//!   image, 16-bit samples by their high byte, as MuJoCo's PNG decoder
//!   converts them; the image's top row is the field's last row), or
//!   MuJoCo's binary format (int32 nrow, int32 ncol, then nrow·ncol float32
//!   elevations, row 0 first, little-endian), found like mesh files
//!   (`compiler meshdir`/`assetdir`, else the model's folder);
//! - `size` = radius_x, radius_y, elevation_z, base_z (m, all positive).
//!
//! Elevations are normalised to [0, 1] as MuJoCo's compiler does
//! ([`HeightField::new`]).

use super::Loader;
use super::xml::{self, Elem, check_attrs};
use crate::model::{HeightField, ModelError};
use roxmltree::Node;
use std::path::Path;

/// Most samples one height field may have (64 MiB of elevations): a model
/// cannot make the loader allocate without bound.
pub(super) const MAX_SAMPLES: usize = 1 << 24;

impl<'c, 'a> Loader<'c, 'a> {
    pub(super) fn hfield(&mut self, node: Node<'a, 'a>) -> Result<(), ModelError> {
        check_attrs(self.ctx, node, &xml::HFIELD, false)?;
        let el = Elem::plain(self.ctx, node);
        let file = el.attr("file");
        let name = match (el.str("name"), file) {
            (Some(n), _) => n.to_string(),
            (None, Some(f)) => {
                Path::new(f.value).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
            }
            (None, None) => return Err(el.err("a height field needs a 'name' (or a 'file' to take it from)")),
        };
        let Some(size) = el.arr::<4>("size")? else {
            return Err(el.err("missing required attribute 'size' (radius_x radius_y elevation_z base_z, in m)"));
        };
        let count = |attr: &str| -> Result<usize, ModelError> {
            match el.int(attr)? {
                None => Ok(0),
                Some(v) => usize::try_from(v)
                    .map_err(|_| el.err_attr(&el.attr(attr).unwrap(), format!("{attr} must be ≥ 0, got {v}"))),
            }
        };
        let (nrow, ncol) = (count("nrow")?, count("ncol")?);
        let (nrow, ncol, raw) = match file {
            Some(f) => {
                if nrow != 0 || ncol != 0 || el.attr("elevation").is_some() {
                    let a = el.attr("nrow").or_else(|| el.attr("ncol")).or_else(|| el.attr("elevation")).unwrap();
                    return Err(el.err_attr(&a, "give either 'file' or nrow/ncol/elevation, not both"));
                }
                let path = self.mesh_path(f.value);
                read_file(&path, el.str("content_type")).map_err(|m| el.err_attr(&f, m))?
            }
            None => {
                if nrow == 0 || ncol == 0 {
                    return Err(el.err(
                        "a height field needs 'file', or 'nrow' and 'ncol' (with optional 'elevation') both ≥ 1",
                    ));
                }
                let n = nrow.checked_mul(ncol).filter(|n| *n <= MAX_SAMPLES).ok_or_else(|| {
                    el.err(format!("{nrow} × {ncol} samples exceed cenic's limit of {MAX_SAMPLES} per height field"))
                })?;
                match el.reals("elevation", 0, usize::MAX)? {
                    None => (nrow, ncol, vec![0.0f32; n]),
                    Some(v) => {
                        if v.len() != n {
                            return Err(el.err_attr(
                                &el.attr("elevation").unwrap(),
                                format!("elevation has {} numbers, expected nrow·ncol = {n}", v.len()),
                            ));
                        }
                        // Written from the top row down (MuJoCo flips the rows).
                        let mut raw = vec![0.0f32; n];
                        for r in 0..nrow {
                            for c in 0..ncol {
                                raw[(nrow - 1 - r) * ncol + c] = v[r * ncol + c] as f32;
                            }
                        }
                        (nrow, ncol, raw)
                    }
                }
            }
        };
        let field = HeightField::new(&name, nrow, ncol, size, &raw).map_err(|m| match el.attr("size") {
            Some(a) if m.starts_with("size") => el.err_attr(&a, m),
            _ => el.err(m),
        })?;
        self.src.hfield.push(node);
        self.b.add_hfield(field);
        Ok(())
    }
}

/// (nrow, ncol, elevations with row 0 at −y) of a PNG or MuJoCo binary
/// height-field file; the format follows `content_type` when given, else
/// the extension (`.png`), else the binary format (as MuJoCo).
fn read_file(path: &Path, content_type: Option<&str>) -> Result<(usize, usize, Vec<f32>), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read height-field file '{}': {e}", path.display()))?;
    let what = |m: String| format!("height-field file '{}': {m}", path.display());
    let ext = path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()).unwrap_or_default();
    let png = match content_type.map(str::trim) {
        Some("image/png") => true,
        Some("image/vnd.mujoco.hfield") => false,
        Some(t) => {
            return Err(what(format!(
                "unsupported content_type \"{t}\" (supported: image/png, image/vnd.mujoco.hfield)"
            )));
        }
        None => ext == "png",
    };
    if png { read_png(&bytes).map_err(what) } else { read_binary(&bytes).map_err(what) }
}

/// MuJoCo's binary height field: int32 nrow, int32 ncol, nrow·ncol float32.
pub(super) fn read_binary(b: &[u8]) -> Result<(usize, usize, Vec<f32>), String> {
    if b.len() < 8 {
        return Err(format!("{} bytes is too short for the header (int32 nrow, int32 ncol)", b.len()));
    }
    let int = |o: usize| i32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    let (nrow, ncol) = (int(0), int(4));
    if nrow < 1 || ncol < 1 {
        return Err(format!("non-positive dimensions {nrow} × {ncol}"));
    }
    let (nrow, ncol) = (nrow as usize, ncol as usize);
    let n = nrow
        .checked_mul(ncol)
        .filter(|n| *n <= MAX_SAMPLES)
        .ok_or_else(|| format!("{nrow} × {ncol} samples exceed cenic's limit of {MAX_SAMPLES} per height field"))?;
    if b.len() != 8 + 4 * n {
        return Err(format!("{} bytes, expected 8 + 4·{nrow}·{ncol} = {}", b.len(), 8 + 4 * n));
    }
    let data = (0..n).map(|i| f32::from_le_bytes([b[8 + 4 * i], b[9 + 4 * i], b[10 + 4 * i], b[11 + 4 * i]])).collect();
    Ok((nrow, ncol, data))
}

/// A PNG height field: the first channel of each pixel at 8 bits (grey, or
/// red; 16-bit samples by their high byte), the image's top row last.
pub(super) fn read_png(bytes: &[u8]) -> Result<(usize, usize, Vec<f32>), String> {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(|e| format!("not a readable PNG: {e}"))?;
    let (w, h) = (reader.info().width as usize, reader.info().height as usize);
    if w.checked_mul(h).is_none_or(|n| n > MAX_SAMPLES) {
        return Err(format!("{w} × {h} pixels exceed cenic's limit of {MAX_SAMPLES} per height field"));
    }
    let mut buf = vec![0u8; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).map_err(|e| format!("not a readable PNG: {e}"))?;
    let channels = info.color_type.samples();
    if info.bit_depth != png::BitDepth::Eight {
        return Err(format!("unsupported PNG bit depth {:?}", info.bit_depth));
    }
    let (ncol, nrow) = (info.width as usize, info.height as usize);
    let mut data = vec![0.0f32; nrow * ncol];
    for r in 0..nrow {
        let row = &buf[(nrow - 1 - r) * info.line_size..];
        for c in 0..ncol {
            data[r * ncol + c] = row[c * channels] as f32;
        }
    }
    Ok((nrow, ncol, data))
}
