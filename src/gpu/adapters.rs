//! Which adapter a process uses: the numbered adapter list and the
//! selection rule (device layer: pure functions over adapter descriptions
//! and settings, so the rule is tested without the GPUs it is about).
//!
//! # The adapter list
//! wgpu's adapters (under `WGPU_BACKEND`), one entry per physical device
//! (a device seen through several backends is listed once, through the
//! first of Vulkan, Metal, DX12, GL), ordered: discrete GPUs, then other
//! hardware GPUs (integrated, virtual), then software adapters (Mesa's
//! lavapipe), each group by PCI bus id where the driver reports one, else
//! in wgpu's order. `gpu:N` counts in this list's GPUs; on a node of
//! identical GPUs (or with `CUDA_DEVICE_ORDER=PCI_BUS_ID`) index N is CUDA
//! device N and `nvidia-smi`'s GPU N. A machine without a hardware GPU
//! counts its software adapters instead. `cenic info --adapters` prints
//! the list.
//!
//! # The rule
//! 1. `CUDA_VISIBLE_DEVICES` (a comma-separated list of GPU indices, as
//!    CUDA, torchrun and Ray's GPU actors use it) restricts and renumbers
//!    the GPUs: visible GPU k is list GPU `CUDA_VISIBLE_DEVICES[k]`. An
//!    empty value hides every GPU. Ignored on machines with no hardware GPU
//!    (the software adapters are not CUDA devices).
//! 2. `device="gpu:N"` takes visible GPU N (as `cuda:N` does);
//!    `device="gpu:NAME"` the first adapter in the list whose name contains
//!    NAME (case-insensitive, visible or not).
//! 3. `device="gpu"`: `WGPU_ADAPTER_NAME` when set (a name as above);
//!    else, under torchrun (`LOCAL_RANK` set), visible GPU
//!    `LOCAL_RANK mod (visible GPUs)` (one process per GPU; more processes
//!    than GPUs share them in turn); else, with `CUDA_VISIBLE_DEVICES`
//!    set, the first visible GPU; else the adapter wgpu prefers under
//!    `WGPU_POWER_PREF` (default high performance).

use super::error::GpuError;

/// What the selection rule knows of one adapter (from `wgpu::AdapterInfo`).
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterDesc {
    /// Name as the driver reports it.
    pub name: String,
    /// Backend it was enumerated through.
    pub backend: wgpu::Backend,
    /// Discrete, integrated, virtual, CPU (software) or other.
    pub device_type: wgpu::DeviceType,
    /// PCI vendor id (or the backend's equivalent).
    pub vendor: u32,
    /// PCI device id (or the backend's equivalent).
    pub device: u32,
    /// PCI bus id (`0000:01:00.0`), empty when the driver does not report it.
    pub pci_bus_id: String,
    /// Driver name and version.
    pub driver: String,
}

impl AdapterDesc {
    /// The description of a wgpu adapter.
    pub fn from_info(i: &wgpu::AdapterInfo) -> Self {
        let driver =
            if i.driver_info.is_empty() { i.driver.clone() } else { format!("{} {}", i.driver, i.driver_info) };
        Self {
            name: i.name.clone(),
            backend: i.backend,
            device_type: i.device_type,
            vendor: i.vendor,
            device: i.device,
            pci_bus_id: i.device_pci_bus_id.clone(),
            driver,
        }
    }

    /// A hardware GPU (not a software adapter running on the CPU).
    pub fn is_hardware(&self) -> bool {
        self.device_type != wgpu::DeviceType::Cpu
    }

    /// Same physical device as `o` (through another backend): same vendor,
    /// device id and name, and same bus id where both report one.
    fn same_device(&self, o: &AdapterDesc) -> bool {
        let bus = self.pci_bus_id.is_empty() || o.pci_bus_id.is_empty() || self.pci_bus_id == o.pci_bus_id;
        self.vendor == o.vendor && self.device == o.device && self.name == o.name && bus
    }
}

/// Backends in the order a device seen through several is listed through.
const BACKEND_PRIORITY: [wgpu::Backend; 4] =
    [wgpu::Backend::Vulkan, wgpu::Backend::Metal, wgpu::Backend::Dx12, wgpu::Backend::Gl];

fn backend_rank(b: wgpu::Backend) -> usize {
    BACKEND_PRIORITY.iter().position(|&x| x == b).unwrap_or(BACKEND_PRIORITY.len())
}

fn type_rank(t: wgpu::DeviceType) -> usize {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::Cpu => 2,
        _ => 1,
    }
}

/// The adapter list ([module docs](self)): indices into `adapters` (wgpu's
/// enumeration order), duplicates through lower-priority backends left
/// out, in list order.
pub fn adapter_order(adapters: &[AdapterDesc]) -> Vec<usize> {
    let mut keep: Vec<usize> = (0..adapters.len())
        .filter(|&i| {
            let a = &adapters[i];
            !adapters.iter().enumerate().any(|(j, b)| {
                let (ra, rb) = (backend_rank(a.backend), backend_rank(b.backend));
                // A copy through a better backend (or, on the same backend, none: distinct devices).
                a.backend != b.backend && (rb < ra || (rb == ra && j < i)) && a.same_device(b)
            })
        })
        .collect();
    // Stable: the enumeration order decides among equals (and devices without a bus id).
    keep.sort_by(|&i, &j| {
        let (a, b) = (&adapters[i], &adapters[j]);
        let bus = |d: &AdapterDesc| (d.pci_bus_id.is_empty(), d.pci_bus_id.clone());
        type_rank(a.device_type).cmp(&type_rank(b.device_type)).then_with(|| bus(a).cmp(&bus(b)))
    });
    keep
}

/// A device request: `gpu`, `gpu:N` or `gpu:NAME`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AdapterRequest {
    /// `gpu`: by the environment (rule 3).
    #[default]
    Auto,
    /// `gpu:N`: visible GPU N.
    Index(usize),
    /// `gpu:NAME`: the first adapter whose name contains NAME (case-insensitive).
    Name(String),
}

impl AdapterRequest {
    /// Parses `gpu`, `gpu:N` (a non-negative integer) or `gpu:NAME`.
    pub fn parse(device: &str) -> Result<Self, GpuError> {
        let bad = || {
            GpuError::Selection(format!(
                "device '{device}': expected 'gpu', 'gpu:N' (a non-negative adapter index) or 'gpu:NAME' (part of an adapter's name)"
            ))
        };
        let rest = match device.split_once(':') {
            None if device == "gpu" => return Ok(Self::Auto),
            Some(("gpu", rest)) => rest.trim(),
            _ => return Err(bad()),
        };
        if rest.is_empty() || rest.starts_with('-') || rest.starts_with('+') {
            return Err(bad());
        }
        Ok(match rest.parse::<usize>() {
            Ok(n) => Self::Index(n),
            Err(_) => Self::Name(rest.to_string()),
        })
    }
}

impl std::fmt::Display for AdapterRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Auto => write!(f, "gpu"),
            Self::Index(n) => write!(f, "gpu:{n}"),
            Self::Name(s) => write!(f, "gpu:{s}"),
        }
    }
}

/// The settings the rule reads: the request and the environment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// What the caller asked for.
    pub request: AdapterRequest,
    /// `WGPU_ADAPTER_NAME`.
    pub adapter_name: Option<String>,
    /// `CUDA_VISIBLE_DEVICES`, unparsed (`Some("")` hides every GPU).
    pub visible_devices: Option<String>,
    /// `LOCAL_RANK` (torchrun), unparsed.
    pub local_rank: Option<String>,
}

/// Where [`choose_adapter`] lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// This position in the adapter list.
    Listed(usize),
    /// The adapter wgpu prefers under the power preference (nothing in the request or environment chose).
    Preferred,
}

impl Selection {
    /// The request `device` with the environment variables of this process.
    pub fn from_env(request: AdapterRequest) -> Self {
        let var = |k: &str| std::env::var(k).ok();
        Self {
            request,
            adapter_name: var("WGPU_ADAPTER_NAME").filter(|s| !s.is_empty()),
            visible_devices: var("CUDA_VISIBLE_DEVICES"),
            local_rank: var("LOCAL_RANK").filter(|s| !s.trim().is_empty()),
        }
    }

    /// The GPUs this process sees, as positions in `list` (the adapter list,
    /// in order): rule 1.
    pub fn visible(&self, list: &[AdapterDesc]) -> Result<Vec<usize>, GpuError> {
        let hardware: Vec<usize> = (0..list.len()).filter(|&i| list[i].is_hardware()).collect();
        if hardware.is_empty() {
            return Ok((0..list.len()).collect());
        }
        let Some(spec) = &self.visible_devices else { return Ok(hardware) };
        if spec.trim().is_empty() {
            return Ok(vec![]);
        }
        spec.split(',')
            .map(|entry| {
                let e = entry.trim();
                match e.parse::<usize>() {
                    Ok(k) if k < hardware.len() => Ok(hardware[k]),
                    Ok(k) => Err(GpuError::Selection(format!(
                        "CUDA_VISIBLE_DEVICES='{spec}' names GPU {k}, but this machine has {} GPUs (0..{})",
                        hardware.len(),
                        hardware.len() - 1
                    ))),
                    Err(_) => Err(GpuError::Selection(format!(
                        "CUDA_VISIBLE_DEVICES='{spec}': entry '{e}' is not a GPU index (cenic maps indices, not UUIDs or MIG names; \
                         use device='gpu:N' or 'gpu:NAME' instead)"
                    ))),
                }
            })
            .collect()
    }
}

/// The adapter the rule picks ([module docs](self)) from `list`, the
/// adapter list in order (see [`adapter_order`]).
pub fn choose_adapter(list: &[AdapterDesc], sel: &Selection) -> Result<Choice, GpuError> {
    let names = || list.iter().map(|a| a.name.as_str()).collect::<Vec<_>>();
    let by_name = |wanted: &str, source: &str| -> Result<Choice, GpuError> {
        let w = wanted.to_lowercase();
        list.iter().position(|a| a.name.to_lowercase().contains(&w)).map(Choice::Listed).ok_or_else(|| {
            GpuError::NoAdapter(format!("{source}='{wanted}' matches none of the adapters {:?}", names()))
        })
    };
    let hidden = || {
        GpuError::NoAdapter(format!(
            "CUDA_VISIBLE_DEVICES is empty, so no GPU is visible to this process (adapters: {:?}; a Ray actor needs num_gpus > 0)",
            names()
        ))
    };
    match &sel.request {
        AdapterRequest::Name(n) => by_name(n, "device gpu:NAME"),
        AdapterRequest::Index(k) => {
            let visible = sel.visible(list)?;
            if visible.is_empty() {
                return Err(hidden());
            }
            visible.get(*k).map(|&i| Choice::Listed(i)).ok_or_else(|| {
                let under = match &sel.visible_devices {
                    Some(v) if list.iter().any(AdapterDesc::is_hardware) => {
                        format!(" under CUDA_VISIBLE_DEVICES='{v}'")
                    }
                    _ => String::new(),
                };
                GpuError::Selection(format!(
                    "device 'gpu:{k}': this process sees {} GPUs{under} (gpu:0..gpu:{}): {:?}",
                    visible.len(),
                    visible.len() - 1,
                    visible.iter().map(|&i| list[i].name.as_str()).collect::<Vec<_>>()
                ))
            })
        }
        AdapterRequest::Auto => {
            if let Some(n) = &sel.adapter_name {
                return by_name(n, "WGPU_ADAPTER_NAME");
            }
            let restricted = sel.visible_devices.is_some() && list.iter().any(AdapterDesc::is_hardware);
            if sel.local_rank.is_none() && !restricted {
                return Ok(Choice::Preferred);
            }
            let visible = sel.visible(list)?;
            if visible.is_empty() {
                return Err(if list.is_empty() {
                    GpuError::NoAdapter("wgpu lists no adapter".into())
                } else {
                    hidden()
                });
            }
            let rank = match &sel.local_rank {
                None => 0,
                Some(r) => r
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| GpuError::Selection(format!("LOCAL_RANK='{r}' is not a non-negative integer")))?,
            };
            Ok(Choice::Listed(visible[rank % visible.len()]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::{Backend, DeviceType};

    fn gpu(name: &str, backend: Backend, ty: DeviceType, bus: &str) -> AdapterDesc {
        AdapterDesc {
            name: name.into(),
            backend,
            device_type: ty,
            vendor: if ty == DeviceType::Cpu { 0x10005 } else { 0x10de },
            device: name.len() as u32,
            pci_bus_id: bus.into(),
            driver: String::new(),
        }
    }

    /// Four identical GPUs enumerated out of bus order, plus lavapipe.
    fn node() -> Vec<AdapterDesc> {
        let h = |bus| gpu("NVIDIA H100 80GB HBM3", Backend::Vulkan, DeviceType::DiscreteGpu, bus);
        vec![
            gpu("llvmpipe (LLVM 15.0.6, 256 bits)", Backend::Vulkan, DeviceType::Cpu, ""),
            h("0000:19:00.0"),
            h("0000:04:00.0"),
            h("0000:c2:00.0"),
            h("0000:5a:00.0"),
        ]
    }

    fn listed(adapters: &[AdapterDesc]) -> Vec<AdapterDesc> {
        adapter_order(adapters).into_iter().map(|i| adapters[i].clone()).collect()
    }

    fn sel(request: &str, visible: Option<&str>, rank: Option<&str>) -> Selection {
        Selection {
            request: AdapterRequest::parse(request).unwrap(),
            adapter_name: None,
            visible_devices: visible.map(str::to_string),
            local_rank: rank.map(str::to_string),
        }
    }

    fn bus_of(list: &[AdapterDesc], c: Result<Choice, GpuError>) -> String {
        match c.unwrap() {
            Choice::Listed(i) => list[i].pci_bus_id.clone(),
            Choice::Preferred => "preferred".into(),
        }
    }

    #[test]
    fn list_orders_gpus_by_bus_then_software() {
        let l = listed(&node());
        let buses: Vec<_> = l.iter().map(|a| a.pci_bus_id.as_str()).collect();
        assert_eq!(buses, ["0000:04:00.0", "0000:19:00.0", "0000:5a:00.0", "0000:c2:00.0", ""]);
        assert_eq!(l[4].device_type, DeviceType::Cpu);
    }

    #[test]
    fn a_device_through_two_backends_is_listed_once() {
        let mut a = vec![
            gpu("Radeon", Backend::Gl, DeviceType::DiscreteGpu, ""),
            gpu("Radeon", Backend::Vulkan, DeviceType::DiscreteGpu, "0000:03:00.0"),
            gpu("Intel UHD", Backend::Vulkan, DeviceType::IntegratedGpu, "0000:00:02.0"),
        ];
        let l = listed(&a);
        assert_eq!(l.len(), 2);
        assert_eq!((l[0].name.as_str(), l[0].backend), ("Radeon", Backend::Vulkan));
        // The discrete GPU comes first although its bus id is higher.
        assert_eq!(l[1].name, "Intel UHD");
        // Two identical GPUs on one backend are two devices.
        a.push(gpu("Radeon", Backend::Vulkan, DeviceType::DiscreteGpu, ""));
        assert_eq!(listed(&a).len(), 3);
    }

    #[test]
    fn parse_requests() {
        assert_eq!(AdapterRequest::parse("gpu").unwrap(), AdapterRequest::Auto);
        assert_eq!(AdapterRequest::parse("gpu:3").unwrap(), AdapterRequest::Index(3));
        assert_eq!(AdapterRequest::parse("gpu:H100").unwrap(), AdapterRequest::Name("H100".into()));
        for bad in ["cpu", "cuda:0", "gpu:", "gpu:-1", "GPU"] {
            let e = AdapterRequest::parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("'{bad}'")) && e.contains("gpu:N"), "{bad}: {e}");
        }
        assert_eq!(AdapterRequest::Index(2).to_string(), "gpu:2");
    }

    #[test]
    fn no_setting_leaves_the_choice_to_wgpu() {
        let l = listed(&node());
        assert_eq!(choose_adapter(&l, &sel("gpu", None, None)).unwrap(), Choice::Preferred);
    }

    #[test]
    fn index_counts_gpus_in_bus_order() {
        let l = listed(&node());
        assert_eq!(bus_of(&l, choose_adapter(&l, &sel("gpu:0", None, None))), "0000:04:00.0");
        assert_eq!(bus_of(&l, choose_adapter(&l, &sel("gpu:3", None, None))), "0000:c2:00.0");
        // The software adapter is not a GPU when hardware exists.
        let e = choose_adapter(&l, &sel("gpu:4", None, None)).unwrap_err().to_string();
        assert!(e.contains("gpu:4") && e.contains("4 GPUs"), "{e}");
    }

    #[test]
    fn torchrun_local_rank_takes_its_own_gpu() {
        let l = listed(&node());
        let buses: Vec<_> =
            (0..4).map(|r| bus_of(&l, choose_adapter(&l, &sel("gpu", None, Some(&r.to_string()))))).collect();
        assert_eq!(buses, ["0000:04:00.0", "0000:19:00.0", "0000:5a:00.0", "0000:c2:00.0"]);
        // More processes than GPUs share them in turn.
        assert_eq!(bus_of(&l, choose_adapter(&l, &sel("gpu", None, Some("5")))), "0000:19:00.0");
        let e = choose_adapter(&l, &sel("gpu", None, Some("one"))).unwrap_err().to_string();
        assert!(e.contains("LOCAL_RANK='one'"), "{e}");
    }

    #[test]
    fn visible_devices_restrict_and_renumber() {
        let l = listed(&node());
        // Ray's GPU actor: one visible GPU, no rank.
        assert_eq!(bus_of(&l, choose_adapter(&l, &sel("gpu", Some("2"), None))), "0000:5a:00.0");
        // torchrun on two of the four GPUs: rank k gets visible GPU k.
        assert_eq!(bus_of(&l, choose_adapter(&l, &sel("gpu", Some("3,1"), Some("0")))), "0000:c2:00.0");
        assert_eq!(bus_of(&l, choose_adapter(&l, &sel("gpu", Some("3, 1"), Some("1")))), "0000:19:00.0");
        // gpu:N counts visible GPUs, as cuda:N does.
        assert_eq!(bus_of(&l, choose_adapter(&l, &sel("gpu:1", Some("3,1"), None))), "0000:19:00.0");
        let e = choose_adapter(&l, &sel("gpu:2", Some("3,1"), None)).unwrap_err().to_string();
        assert!(e.contains("2 GPUs") && e.contains("CUDA_VISIBLE_DEVICES='3,1'"), "{e}");
        // Empty hides every GPU; a name still reaches any adapter.
        let e = choose_adapter(&l, &sel("gpu", Some(""), None)).unwrap_err();
        assert!(matches!(e, GpuError::NoAdapter(_)) && e.to_string().contains("empty"), "{e}");
        assert_eq!(bus_of(&l, choose_adapter(&l, &sel("gpu:llvmpipe", Some(""), None))), "");
        for bad in ["7", "GPU-8f2e9c1a-0000", "0,x"] {
            let e = choose_adapter(&l, &sel("gpu", Some(bad), None)).unwrap_err().to_string();
            assert!(e.contains("CUDA_VISIBLE_DEVICES"), "{bad}: {e}");
        }
    }

    #[test]
    fn names_match_case_insensitively() {
        let l = listed(&node());
        assert_eq!(bus_of(&l, choose_adapter(&l, &sel("gpu:h100", None, None))), "0000:04:00.0");
        let mut s = sel("gpu", Some("3"), Some("2"));
        s.adapter_name = Some("LLVMPIPE".into());
        assert_eq!(bus_of(&l, choose_adapter(&l, &s)), "");
        let e = choose_adapter(&l, &sel("gpu:A100", None, None)).unwrap_err().to_string();
        assert!(e.contains("A100") && e.contains("H100"), "{e}");
    }

    #[test]
    fn a_machine_with_only_software_adapters() {
        // This machine: lavapipe only. CUDA_VISIBLE_DEVICES names CUDA
        // devices, which it has none of, so it does not hide lavapipe.
        let l = listed(&node()[..1]);
        assert_eq!(choose_adapter(&l, &sel("gpu:0", None, None)).unwrap(), Choice::Listed(0));
        assert_eq!(choose_adapter(&l, &sel("gpu", Some(""), Some("3"))).unwrap(), Choice::Listed(0));
        assert_eq!(choose_adapter(&l, &sel("gpu", Some("0"), None)).unwrap(), Choice::Preferred);
        assert!(choose_adapter(&l, &sel("gpu:1", None, None)).is_err());
        assert!(matches!(choose_adapter(&[], &sel("gpu", None, Some("0"))), Err(GpuError::NoAdapter(_))));
    }
}
