//! Which device the neural models run on: burn-wgpu on a hardware GPU
//! adapter when there is one, else burn's `flex` CPU backend. A software
//! Vulkan driver (e.g. lavapipe) is not a GPU here: it is slower than `flex`.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use burn::tensor::{Device, DeviceKind};

/// What the user asked for (`--device`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DevicePreference {
    /// A hardware GPU when there is one, else the CPU.
    #[default]
    Auto,
    Cpu,
    /// The wgpu backend on its best adapter, even a software one.
    Gpu,
}

/// The chosen device and how to describe it.
#[derive(Debug, Clone)]
pub struct Backend {
    pub device: Device,
    /// `wgpu` or `flex`.
    pub name: &'static str,
    /// The adapter's name (or the CPU backend's).
    pub adapter: String,
}

impl Backend {
    /// Whether the models run on the wgpu backend (a GPU, or a software
    /// adapter asked for by `--device gpu`), not on the CPU backend.
    pub fn is_gpu(&self) -> bool {
        self.name == "wgpu"
    }
}

/// Whether `device` is the CPU backend's (where model work is dealt over
/// threads, [`super::parallel`]), not a GPU's.
pub fn on_cpu(device: &Device) -> bool {
    *device == Device::flex()
}

/// A graphics adapter wgpu can see.
#[derive(Debug, Clone)]
pub struct Adapter {
    pub name: String,
    pub kind: wgpu::DeviceType,
    pub api: String,
}

impl Adapter {
    /// A real GPU (not a CPU/software implementation).
    pub fn is_hardware(&self) -> bool {
        matches!(self.kind, wgpu::DeviceType::DiscreteGpu | wgpu::DeviceType::IntegratedGpu | wgpu::DeviceType::VirtualGpu)
    }
}

/// Every Vulkan / Metal / DX12 adapter wgpu enumerates (the backends burn-wgpu
/// runs on; none when no driver is installed).
pub fn adapters() -> Vec<Adapter> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::PRIMARY;
    let instance = wgpu::Instance::new(desc);
    block_on(instance.enumerate_adapters(wgpu::Backends::PRIMARY))
        .into_iter()
        .map(|a| {
            let info = a.get_info();
            Adapter { name: info.name, kind: info.device_type, api: format!("{:?}", info.backend) }
        })
        .collect()
}

/// Picks the device for a preference.
pub fn select(pref: DevicePreference) -> Backend {
    let cpu = || Backend { device: Device::flex(), name: "flex", adapter: "CPU (burn flex)".into() };
    match pref {
        DevicePreference::Cpu => cpu(),
        DevicePreference::Gpu => {
            let list = adapters();
            let best = list.iter().find(|a| a.is_hardware()).or(list.first());
            match best {
                Some(a) => Backend { device: wgpu_device(a, &list), name: "wgpu", adapter: describe(a) },
                None => cpu(),
            }
        }
        DevicePreference::Auto => {
            let list = adapters();
            match list.iter().find(|a| a.is_hardware()) {
                Some(a) => Backend { device: wgpu_device(a, &list), name: "wgpu", adapter: describe(a) },
                None => cpu(),
            }
        }
    }
}

fn describe(a: &Adapter) -> String {
    format!("{} ({:?}, {})", a.name, a.kind, a.api)
}

/// The burn device for an adapter: its index among adapters of its kind.
fn wgpu_device(a: &Adapter, all: &[Adapter]) -> Device {
    let index = all.iter().filter(|x| x.kind == a.kind).position(|x| x.name == a.name).unwrap_or(0);
    let kind = match a.kind {
        wgpu::DeviceType::DiscreteGpu => DeviceKind::DiscreteGpu(index),
        wgpu::DeviceType::IntegratedGpu => DeviceKind::IntegratedGpu(index),
        wgpu::DeviceType::VirtualGpu => DeviceKind::VirtualGpu(index),
        wgpu::DeviceType::Cpu => DeviceKind::Cpu,
        wgpu::DeviceType::Other => DeviceKind::DefaultDevice,
    };
    Device::wgpu(kind)
}

/// Drives a future that completes without an external reactor.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}
