//! The device layer on OpenCL (runtime/device/opencl/): memory, copies, streams, events and
//! their faults, on this machine's OpenCL platform (PoCL in CI, installed by .ci/run); each test
//! says it is skipped, and passes, where there is none.

use parking_lot::Mutex;
use tvm_runtime::abi::{device_type, DLDataType, DLDevice};
use tvm_runtime::runtime::device::device_api;
use tvm_runtime::runtime::device::opencl::{driver, live_buffers};
use tvm_runtime::runtime::dlpack::tensor_ref::TensorRef;
use tvm_runtime::runtime::tensor::ndarray::{copy_from_to, copy_from_to_on};
use tvm_runtime::runtime::{Module, NDArray, Value};

/// OpenCL tests run one at a time, so the live-buffer count is theirs alone.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const F32: DLDataType = DLDataType::FLOAT32;

/// opencl:0, or `None` (saying why) where OpenCL is missing.
fn device() -> Option<DLDevice> {
    tvm_runtime::init();
    match driver() {
        Ok(_) => Some(DLDevice { device_type: device_type::OPENCL, device_id: 0 }),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

fn floats(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

#[test]
fn data_goes_to_the_device_between_buffers_and_back() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let data: Vec<f32> = (0..1000).map(|i| i as f32 * 0.5).collect();
    let a = NDArray::empty(&[1000], F32, dev).unwrap();
    let b = NDArray::empty(&[1000], F32, dev).unwrap();
    a.copy_from_bytes(&floats(&data)).unwrap();
    copy_from_to(a.tensor(), b.tensor()).unwrap();
    assert_eq!(b.to_vec_u8().unwrap(), floats(&data));
    // A view at an offset reads the buffer from there.
    let tail = a.create_view_at(400 * 4, &[600], F32).unwrap();
    assert_eq!(tail.to_vec_u8().unwrap(), floats(&data[400..]));
}

#[test]
fn streams_run_in_order_and_wait_for_each_others_events() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let api = device_api(device_type::OPENCL).unwrap();
    let n = 1 << 18;
    let data: Vec<f32> = (0..n).map(|i| (i % 977) as f32).collect();
    let host_in = NDArray::from_bytes(&[n as i64], F32, &floats(&data)).unwrap();
    let host_out = NDArray::empty(&[n as i64], F32, DLDevice::cpu(0)).unwrap();
    let (a, b) = (NDArray::empty(&[n as i64], F32, dev).unwrap(), NDArray::empty(&[n as i64], F32, dev).unwrap());
    let (s1, s2) = (api.create_stream(dev).unwrap(), api.create_stream(dev).unwrap());
    let e = api.create_event(dev).unwrap();
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // SAFETY: every tensor outlives the streams' work (both synchronized below).
    unsafe {
        copy_from_to_on(host_in.tensor(), a.tensor(), s1).unwrap();
        let flag = ran.clone();
        api.launch_host_task(dev, s1, Box::new(move || flag.store(true, std::sync::atomic::Ordering::SeqCst))).unwrap();
        api.record_event(dev, e, s1).unwrap();
        api.stream_wait_event(dev, s2, e).unwrap();
        copy_from_to_on(a.tensor(), b.tensor(), s2).unwrap();
        copy_from_to_on(b.tensor(), host_out.tensor(), s2).unwrap();
    }
    api.stream_sync(dev, s2).unwrap();
    assert!(api.event_query(dev, e).unwrap(), "the event s2 waited for is reached");
    assert!(ran.load(std::sync::atomic::Ordering::SeqCst), "the host task ran before the event");
    assert!(api.stream_query(dev, s2).unwrap());
    assert_eq!(host_out.to_vec_u8().unwrap(), floats(&data));
    api.sync_stream_from_to(dev, s1, s2).unwrap();
    api.stream_sync(dev, s2).unwrap();
    api.free_event(dev, e).unwrap();
    api.free_stream(dev, s1).unwrap();
    api.free_stream(dev, s2).unwrap();
}

#[test]
fn foreign_or_freed_pointers_and_handles_are_errors_naming_them() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let api = device_api(device_type::OPENCL).unwrap();
    let s = api.create_stream(dev).unwrap();
    api.free_stream(dev, s).unwrap();
    let twice = api.free_stream(dev, s).unwrap_err();
    assert!(twice.to_string().contains("freed twice"), "{twice}");
    assert!(api.stream_sync(dev, s).is_err(), "a freed stream is not used");
    let e = api.create_event(dev).unwrap();
    api.free_event(dev, e).unwrap();
    assert!(api.free_event(dev, e).is_err());
    // A host array's memory where device memory is required.
    let host = NDArray::empty(&[4], F32, DLDevice::cpu(0)).unwrap();
    let mut fake = *host.tensor().raw();
    fake.device = dev;
    // SAFETY: `fake` describes the host array's live memory (under a device it is not on).
    let err = unsafe { copy_from_to(host.tensor(), TensorRef::new(&fake)) }.unwrap_err();
    assert!(err.to_string().contains("not OpenCL memory"), "{err}");
    let missing = NDArray::empty(&[4], F32, DLDevice { device_type: device_type::OPENCL, device_id: 99 }).unwrap_err();
    assert!(missing.to_string().contains("opencl:99 does not exist"), "{missing}");
    let small = NDArray::empty(&[2], F32, dev).unwrap();
    assert!(copy_from_to(host.tensor(), small.tensor()).is_err(), "sizes differ");
}

#[test]
fn failed_allocations_leak_nothing() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let before = live_buffers();
    let too_big = driver().unwrap().device(0).unwrap().max_alloc + 1;
    for _ in 0..200 {
        let err = NDArray::empty(&[too_big as i64], DLDataType::new(tvm_runtime::abi::dtype_code::UINT, 8, 1), dev)
            .unwrap_err();
        assert!(err.to_string().contains("largest allocation"), "{err}");
    }
    let kept: Vec<_> = (0..50).map(|_| NDArray::empty(&[256], F32, dev).unwrap()).collect();
    assert_eq!(live_buffers(), before + 50);
    drop(kept);
    assert_eq!(live_buffers(), before, "every buffer freed with its array");
}

#[test]
fn without_opencl_the_error_names_what_is_missing() {
    tvm_runtime::init();
    if driver().is_ok() {
        eprintln!("skipped: this machine has OpenCL");
        return;
    }
    let err = NDArray::empty(&[4], F32, DLDevice { device_type: device_type::OPENCL, device_id: 0 }).unwrap_err();
    assert!(err.to_string().contains("OpenCL is not available"), "{err}");
}

/// Threads each driving their own streams (copies in, across, out; a host task; events between
/// two streams) at once: every result is the data each sent, every stream and event freed.
#[test]
fn threads_on_their_own_streams_get_their_own_data_back() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let before = live_buffers();
    std::thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || {
                let api = device_api(device_type::OPENCL).unwrap();
                let data: Vec<f32> = (0..4096).map(|i| (i * (t + 1)) as f32).collect();
                let input = NDArray::from_bytes(&[4096], F32, &floats(&data)).unwrap();
                let output = NDArray::empty(&[4096], F32, DLDevice::cpu(0)).unwrap();
                let (a, b) = (NDArray::empty(&[4096], F32, dev).unwrap(), NDArray::empty(&[4096], F32, dev).unwrap());
                for _ in 0..30 {
                    let (s1, s2, e) = (
                        api.create_stream(dev).unwrap(),
                        api.create_stream(dev).unwrap(),
                        api.create_event(dev).unwrap(),
                    );
                    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
                    let c = count.clone();
                    // SAFETY: every array outlives the streams' work (synchronized below).
                    unsafe {
                        copy_from_to_on(input.tensor(), a.tensor(), s1).unwrap();
                        api.launch_host_task(
                            dev,
                            s1,
                            Box::new(move || {
                                c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            }),
                        )
                        .unwrap();
                        api.record_event(dev, e, s1).unwrap();
                        api.stream_wait_event(dev, s2, e).unwrap();
                        copy_from_to_on(a.tensor(), b.tensor(), s2).unwrap();
                        copy_from_to_on(b.tensor(), output.tensor(), s2).unwrap();
                    }
                    api.stream_sync(dev, s2).unwrap();
                    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 1);
                    assert_eq!(output.to_vec_u8().unwrap(), floats(&data), "thread {t}");
                    api.free_event(dev, e).unwrap();
                    api.free_stream(dev, s1).unwrap();
                    api.free_stream(dev, s2).unwrap();
                }
            });
        }
    });
    assert_eq!(live_buffers(), before);
}

/// A kernel library of tests/data/opencl-0.27 (apache-tvm 0.27's host code and OpenCL C).
fn library(name: &str) -> Module {
    let path = format!("{}/tests/data/opencl-0.27/{name}.so", env!("CARGO_MANIFEST_DIR"));
    Module::load_from_file(&path, "").unwrap()
}

fn on_device(dev: DLDevice, data: &[f32], shape: &[i64]) -> NDArray {
    let a = NDArray::empty(shape, F32, dev).unwrap();
    a.copy_from_bytes(&floats(data)).unwrap();
    a
}

fn read(a: &NDArray) -> Vec<f32> {
    a.to_vec_u8().unwrap().chunks(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// A 1-D kernel (blockIdx.x, threadIdx.x) and a 2-D one (blockIdx.y/x, threadIdx.y/x) that
/// apache-tvm 0.27 compiled for OpenCL run on the device; results against plain loops.
#[test]
fn kernels_tvm_compiled_for_opencl_run_on_the_device() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let data: Vec<f32> = (0..1024).map(|i| i as f32 * 0.25).collect();
    let (a, b) = (on_device(dev, &data, &[1024]), NDArray::empty(&[1024], F32, dev).unwrap());
    let add_one = library("add_one").get_function("add_one", true).unwrap().expect("add_one");
    add_one.call(&[Value::NDArray(a.clone()), Value::NDArray(b.clone())]).unwrap();
    assert_eq!(read(&b), data.iter().map(|x| x + 1.0).collect::<Vec<_>>());

    let n = 64;
    let x: Vec<f32> = (0..n * n).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let y: Vec<f32> = (0..n * n).map(|i| ((i * 5) % 11) as f32 * 0.5).collect();
    let (dx, dy) = (on_device(dev, &x, &[n as i64, n as i64]), on_device(dev, &y, &[n as i64, n as i64]));
    let dz = NDArray::empty(&[n as i64, n as i64], F32, dev).unwrap();
    let matmul = library("matmul").get_function("matmul", true).unwrap().expect("matmul");
    matmul.call(&[Value::NDArray(dx), Value::NDArray(dy), Value::NDArray(dz.clone())]).unwrap();
    let z = read(&dz);
    for i in 0..n {
        for j in 0..n {
            let want: f32 = (0..n).map(|k| x[i * n + k] * y[k * n + j]).sum();
            assert_eq!(z[i * n + j], want, "C[{i}, {j}] (small integers and halves: exact)");
        }
    }
}

/// A kernel over a dynamic length takes it as a scalar argument; the launch sizes follow.
#[test]
fn a_dynamic_shape_reaches_the_kernel_as_a_scalar() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let scale = library("scale_dyn").get_function("scale_dyn", true).unwrap().expect("scale_dyn");
    for n in [1usize, 31, 32, 100] {
        let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let (a, b) = (on_device(dev, &data, &[n as i64]), NDArray::empty(&[n as i64], F32, dev).unwrap());
        scale.call(&[Value::NDArray(a), Value::NDArray(b.clone())]).unwrap();
        assert_eq!(read(&b), data.iter().map(|x| x * 2.0 + 0.5).collect::<Vec<_>>(), "n = {n}");
    }
}

/// Host memory where the kernel needs device memory is an error naming the argument.
#[test]
fn a_host_array_passed_to_a_device_kernel_is_an_error() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let add_one = library("add_one").get_function("add_one", true).unwrap().expect("add_one");
    let host = NDArray::empty(&[1024], F32, DLDevice::cpu(0)).unwrap();
    let b = NDArray::empty(&[1024], F32, dev).unwrap();
    let err = add_one.call(&[Value::NDArray(host.clone()), Value::NDArray(b.clone())]).unwrap_err();
    assert!(err.to_string().contains("device_type"), "apache-tvm's host code checks: {err}");
    // The kernel itself, called past the host code's checks.
    let kernel = library("add_one").get_function("add_one_kernel", true).unwrap().expect("the kernel");
    let args = [Value::Handle(host.data_ptr()), Value::Handle(b.data_ptr()), Value::Int(16), Value::Int(64)];
    let err = kernel.call(&args).unwrap_err();
    assert!(err.to_string().contains("not OpenCL memory") && err.to_string().contains("argument 0"), "{err}");
    let err = kernel.call(&args[1..]).unwrap_err();
    assert!(err.to_string().contains("takes 2 arguments and 2 launch values, got 3"), "{err}");
}

/// An `opencl` module's payload as apache-tvm 0.27 writes it: one kernel `name` with
/// `args` float32* arguments and `tags`, and `source`.
fn payload(name: &str, args: usize, tags: &[&str], source: &str) -> Vec<u8> {
    let mut w = tvm_runtime::runtime::base::byteio::Writer::new();
    w.string("cl");
    w.u64(1);
    w.string(name);
    w.string(name);
    w.u64(args as u64);
    for _ in 0..args {
        (w.u8(3), w.u8(64), w.u16(1));
    }
    w.strings(tags);
    w.u64(0);
    w.string(source);
    w.into_bytes()
}

fn load_payload(bytes: Vec<u8>) -> tvm_runtime::runtime::Result<Module> {
    let f = tvm_runtime::runtime::function::registry::get("ffi.Module.load_from_bytes.opencl").expect("the loader");
    match f.call(&[Value::Bytes(bytes)])? {
        Value::Module(m) => Ok(m),
        other => panic!("a module, got {other:?}"),
    }
}

/// Faults of a module and its kernels: a truncated table, a source the compiler rejects (its
/// log in the error), a launch tag the runtime does not know.
#[test]
fn bad_modules_and_launches_are_errors_naming_the_fault() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let good = payload("k", 1, &["blockIdx.x"], "__kernel void k(__global float* a) { a[get_global_id(0)] = 1.0f; }");
    for cut in [3, 12, 40, good.len() - 5] {
        let err = load_payload(good[..cut].to_vec()).err().expect("a truncated payload");
        assert!(err.to_string().contains("opencl"), "cut at {cut}: {err}");
    }
    let buf = NDArray::empty(&[16], F32, dev).unwrap();
    let broken =
        load_payload(payload("k", 1, &["blockIdx.x"], "__kernel void k(__global float* a) { a[0] = undefined_name; }"))
            .unwrap();
    let k = broken.get_function("k", false).unwrap().unwrap();
    let err = k.call(&[Value::Handle(buf.data_ptr()), Value::Int(1)]).unwrap_err();
    assert!(
        err.to_string().contains("building the OpenCL program") && err.to_string().contains("undefined_name"),
        "{err}"
    );
    let odd =
        load_payload(payload("k", 1, &["warpIdx.x"], "__kernel void k(__global float* a) { a[0] = 1.0f; }")).unwrap();
    let err = odd
        .get_function("k", false)
        .unwrap()
        .unwrap()
        .call(&[Value::Handle(buf.data_ptr()), Value::Int(1)])
        .unwrap_err();
    assert!(err.to_string().contains("launch tag \"warpIdx.x\""), "{err}");
}

/// TVM 0.18's graph models built for OpenCL (../shared/tvm-data/opencl-0.18: kernels as OpenCL C
/// in the library, host code for the CPU) run on the device through the graph executor:
/// `default(opencl:0)`, inputs from the host, outputs back; against numpy (mlp) and TVM 0.18's
/// CPU build (cnn).
#[test]
fn tvm_018_graph_models_run_on_the_device() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let root = format!("{}/../shared/tvm-data/opencl-0.18", env!("CARGO_MANIFEST_DIR"));
    if !std::path::Path::new(&root).exists() {
        eprintln!("skipped: {root} is not there");
        return;
    }
    for (model, input, shape, out) in
        [("mlp", "x", vec![4, 32], vec![4, 10]), ("cnn", "data", vec![1, 3, 32, 32], vec![1, 10])]
    {
        let dir = format!("{root}/{model}");
        let lib = Module::load_from_file(&format!("{dir}/packed.so"), "").unwrap();
        let factory = lib.get_function("default", true).unwrap().expect("default");
        let Value::Module(gm) = factory.call(&[Value::Device(dev)]).unwrap() else { panic!("a graph executor") };
        let call = |name: &str, args: &[Value]| gm.get_function(name, false).unwrap().expect(name).call(args).unwrap();
        let x = NDArray::from_bytes(&shape, F32, &std::fs::read(format!("{dir}/input_{input}.bin")).unwrap()).unwrap();
        call("set_input", &[Value::Str(input.into()), Value::NDArray(x)]);
        call("run", &[]);
        let Value::NDArray(y) = call("get_output", &[Value::Int(0)]) else { panic!("an output") };
        assert_eq!(y.device(), dev, "{model}: the output stays on the device");
        let host = NDArray::empty(&out, F32, DLDevice::cpu(0)).unwrap();
        copy_from_to(y.tensor(), host.tensor()).unwrap();
        let want: Vec<f32> = std::fs::read(format!("{dir}/output_0.bin"))
            .unwrap()
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let err = read(&host).iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(err < 1e-5, "{model}: max error {err}");
        eprintln!("{model}: max error {err:e}");
    }
}

/// TVM's `kExist` for OpenCL devices: the platform's devices exist, others do not; the other
/// attribute kinds of a device.
#[test]
fn only_the_platforms_devices_exist() {
    let Some(_) = device() else { return };
    let attr = tvm_runtime::runtime::function::registry::get("runtime.GetDeviceAttr").expect("the global");
    let exist = |id: i64| {
        attr.call(&[Value::Int(device_type::OPENCL as i64), Value::Int(id), Value::Int(0)]).unwrap().as_int().unwrap()
    };
    assert_eq!(exist(0), 1);
    assert_eq!(exist(99), 0);
    // The other kinds, as TVM 0.18's OpenCL device API answers them.
    let get =
        |kind: i64| attr.call(&[Value::Int(device_type::OPENCL as i64), Value::Int(0), Value::Int(kind)]).unwrap();
    assert!(get(1).as_int().unwrap() >= 1, "kMaxThreadsPerBlock");
    assert_eq!(get(2).as_int().unwrap(), 1, "kWarpSize");
    let Value::Str(version) = get(4) else { panic!("kComputeVersion: a string") };
    assert!(version.split('.').all(|p| p.parse::<u32>().is_ok()), "kComputeVersion {version:?}");
    let Value::Str(name) = get(5) else { panic!("kDeviceName: a string") };
    assert_eq!(name, driver().unwrap().device(0).unwrap().name);
    let Value::Str(dims) = get(8) else { panic!("kMaxThreadDimensions: a string") };
    assert_eq!(serde_json::from_str::<Vec<u64>>(&dims).unwrap().len(), 3, "{dims}");
    assert_eq!(get(14).as_int().unwrap() as u64, driver().unwrap().device(0).unwrap().global_mem, "kTotalGlobalMemory");
    assert!(matches!(get(9), Value::Null), "kMaxRegistersPerBlock: no answer");
    assert!(attr.call(&[Value::Int(device_type::OPENCL as i64), Value::Int(99), Value::Int(5)]).is_err());
}

/// A Relax VM model of tests/data/opencl-0.27 on `vm_initialization(opencl:0, cpu:0)`: kernels
/// on the device, the shape heap and shape functions on the host.
fn vm_on_device(name: &str, dev: DLDevice) -> Module {
    let exec = library(name);
    let vm = exec.get_function("vm_load_executable", false).unwrap().unwrap().call(&[]).unwrap().into_module().unwrap();
    let init = vm.get_function("vm_initialization", false).unwrap().unwrap();
    let triple = |d: DLDevice| [Value::Int(d.device_type as i64), Value::Int(d.device_id as i64), Value::Int(2)];
    init.call(&[triple(dev), triple(DLDevice::cpu(0))].concat()).unwrap();
    vm
}

/// The model's input and numpy's output (tests/data/opencl-0.27/make.py).
fn vm_case(name: &str) -> (Vec<f32>, Vec<f32>) {
    let read = |what: &str| {
        let bytes = std::fs::read(format!("{}/tests/data/opencl-0.27/{name}.{what}.bin", env!("CARGO_MANIFEST_DIR")));
        bytes.unwrap().chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect::<Vec<f32>>()
    };
    (read("input"), read("output"))
}

fn max_error(got: &[f32], want: &[f32]) -> f32 {
    assert_eq!(got.len(), want.len());
    got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max)
}

/// Relax VM models apache-tvm 0.27 compiled for OpenCL (an MLP with a dynamic batch, a small conv
/// net; weights are VM constants, copied to the device once at initialization) run on the
/// device: the result stays there; against numpy.
#[test]
fn relax_vm_models_run_on_the_device() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    for (name, shape) in [("vm_mlp", vec![5, 32]), ("vm_cnn", vec![1, 3, 16, 16])] {
        let vm = vm_on_device(name, dev);
        let (input, want) = vm_case(name);
        let main = vm.get_function("main", false).unwrap().unwrap();
        for _ in 0..3 {
            let Value::NDArray(y) = main.call(&[Value::NDArray(on_device(dev, &input, &shape))]).unwrap() else {
                panic!("{name}: a tensor")
            };
            assert_eq!(y.device(), dev, "{name}: the result stays on the device");
            let err = max_error(&read(&y), &want);
            assert!(err < 1e-5, "{name}: max error {err}");
        }
    }
}

/// `set_input` copies host tensors to the VM's first device, as TVM's VM does; a host tensor
/// passed straight to a device function is an error naming the device type it needs.
#[test]
fn vm_inputs_from_the_host() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let vm = vm_on_device("vm_mlp", dev);
    let (input, want) = vm_case("vm_mlp");
    let host = NDArray::from_bytes(&[5, 32], F32, &floats(&input)).unwrap();
    let f = |name: &str| vm.get_function(name, false).unwrap().unwrap();
    f("set_input").call(&[Value::Str("main".into()), Value::NDArray(host.clone())]).unwrap();
    f("invoke_stateful").call(&[Value::Str("main".into())]).unwrap();
    let Value::NDArray(y) = f("get_output").call(&[Value::Str("main".into())]).unwrap() else { panic!("a tensor") };
    assert!(max_error(&read(&y), &want) < 1e-5);
    let err = f("main").call(&[Value::NDArray(host)]).unwrap_err();
    assert!(err.to_string().contains("device_type"), "{err}");
}

// ---- seed 001 on device queues: asynchronous phases and the request pipeline ----------------

use tvm_runtime::abi::DLTensor;
use tvm_runtime::ffi::graph_executor::phases::{
    TVMGraphExecutorGetOutputAsync, TVMGraphExecutorRunAsync, TVMGraphExecutorSetInputAsync,
    TVMGraphExecutorSynchronize,
};
use tvm_runtime::ffi::graph_executor::pipeline::{
    TVMPipelineCreate, TVMPipelineFree, TVMPipelineSubmit, TVMPipelineWait,
};
use tvm_runtime::ffi::graph_executor::{
    TVMGraphExecutor, TVMGraphExecutorCreateFromFactory, TVMGraphExecutorCreateFromFactoryWithOptions,
    TVMGraphExecutorFree, TVMGraphExecutorGetOutput, TVMGraphExecutorRun, TVMGraphExecutorSetInput,
};

/// A module handle of the C API, freed on drop.
struct Factory(*mut std::ffi::c_void);

impl Drop for Factory {
    fn drop(&mut self) {
        // SAFETY: a live module handle of this test, freed once.
        ok(unsafe { tvm_runtime::ffi::legacy::module::TVMModFree(self.0) });
    }
}

/// TVM 0.18's OpenCL cnn (../shared/tvm-data/opencl-0.18), its factory module through the C
/// API; None (saying why) where the data is not there.
fn cnn_factory() -> Option<Factory> {
    let path = format!("{}/../shared/tvm-data/opencl-0.18/cnn/packed.so", env!("CARGO_MANIFEST_DIR"));
    if !std::path::Path::new(&path).exists() {
        eprintln!("skipped: {path} is not there");
        return None;
    }
    let (path, mut m) = (std::ffi::CString::new(path).unwrap(), std::ptr::null_mut());
    // SAFETY: C strings and an out-pointer.
    ok(unsafe { tvm_runtime::ffi::legacy::module::TVMModLoadFromFile(path.as_ptr(), c"".as_ptr(), &mut m) });
    Some(Factory(m))
}

fn ok(code: i32) {
    if code != 0 {
        panic!("call failed: {}", last_error());
    }
}

/// The thread's last error, if any.
fn last_error() -> String {
    let p = tvm_runtime::ffi::legacy::error::TVMGetLastError();
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the thread's last error, a C string.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A host DLTensor over `data` (f32).
fn host(data: &mut [f32], shape: &mut [i64]) -> DLTensor {
    DLTensor {
        data: data.as_mut_ptr().cast(),
        device: DLDevice::cpu(0),
        ndim: shape.len() as i32,
        dtype: F32,
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    }
}

/// `n` different cnn inputs (1x3x32x32).
fn cnn_inputs(n: usize) -> Vec<Vec<f32>> {
    (0..n).map(|k| (0..3 * 32 * 32).map(|i| ((i * 7 + k * 13) % 29) as f32 / 29.0 - 0.5).collect()).collect()
}

/// The synchronous executor's output for each input: what every asynchronous path must equal.
fn cnn_sync_outputs(factory: &Factory, dev: DLDevice, inputs: &mut [Vec<f32>]) -> Vec<Vec<f32>> {
    let mut g: *mut TVMGraphExecutor = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreateFromFactory(factory.0, &dev, 1, &mut g) });
    let outs = inputs
        .iter_mut()
        .map(|x| {
            let (mut xs, mut ys, mut y) = ([1i64, 3, 32, 32], [1i64, 10], vec![0f32; 10]);
            let (xt, mut yt) = (host(x, &mut xs), host(&mut y, &mut ys));
            ok(unsafe { TVMGraphExecutorSetInput(g, c"data".as_ptr(), &xt) });
            ok(unsafe { TVMGraphExecutorRun(g) });
            ok(unsafe { TVMGraphExecutorGetOutput(g, 0, &mut yt) });
            y
        })
        .collect();
    ok(unsafe { TVMGraphExecutorFree(g) });
    outs
}

/// The executor's phases on three OpenCL queues (h2d, compute, d2h), several requests queued
/// before one synchronize: every output bit-identical to the synchronous executor's, so each
/// compute waited for its copy in, and each copy out for its compute (the kernels launched by
/// the compute stage finished before the d2h queue read their output).
#[test]
fn async_phases_on_opencl_queues_match_the_synchronous_executor() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let Some(factory) = cnn_factory() else { return };
    let mut inputs = cnn_inputs(6);
    let want = cnn_sync_outputs(&factory, dev, &mut inputs);
    let api = device_api(device_type::OPENCL).unwrap();
    let streams: Vec<_> = (0..3).map(|_| api.create_stream(dev).unwrap()).collect();
    let mut g: *mut TVMGraphExecutor = std::ptr::null_mut();
    ok(unsafe { TVMGraphExecutorCreateFromFactory(factory.0, &dev, 1, &mut g) });
    for _round in 0..3 {
        let mut got = vec![vec![0f32; 10]; inputs.len()];
        let (mut xs, mut ys) = (vec![[1i64, 3, 32, 32]; inputs.len()], vec![[1i64, 10]; inputs.len()]);
        for ((x, y), (xs, ys)) in inputs.iter_mut().zip(&mut got).zip(xs.iter_mut().zip(&mut ys)) {
            let (xt, mut yt) = (host(x, xs), host(y, ys));
            // SAFETY: the tensors' memory outlives the synchronize below.
            ok(unsafe { TVMGraphExecutorSetInputAsync(g, 0, &xt, streams[0]) });
            ok(unsafe { TVMGraphExecutorRunAsync(g, streams[1]) });
            ok(unsafe { TVMGraphExecutorGetOutputAsync(g, 0, &mut yt, streams[2]) });
        }
        ok(unsafe { TVMGraphExecutorSynchronize(g) });
        assert_eq!(got, want, "every request's output as the synchronous executor's");
    }
    ok(unsafe { TVMGraphExecutorFree(g) });
    // Inter-op workers would launch kernels from threads outside the compute stage.
    let options = c"inter_op_threads=2";
    let rc = unsafe { TVMGraphExecutorCreateFromFactoryWithOptions(factory.0, &dev, 1, options.as_ptr(), &mut g) };
    assert_eq!(rc, -1);
    let last = last_error();
    assert!(last.contains("inter-op workers run models on CPU devices only"), "{last}");
    for s in streams {
        api.free_stream(dev, s).unwrap();
    }
}

/// Seed 001's request pipeline on OpenCL: requests from the host through h2d, compute and d2h
/// queues of two groups; every output bit-identical to the synchronous executor's.
#[test]
fn the_request_pipeline_on_opencl_matches_the_synchronous_executor() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let Some(factory) = cnn_factory() else { return };
    let mut inputs = cnn_inputs(12);
    let want = cnn_sync_outputs(&factory, dev, &mut inputs);
    let mut p = std::ptr::null_mut();
    let options = c"core_groups=2,threads_per_group=1,in_flight=4";
    ok(unsafe { TVMPipelineCreate(factory.0, &dev, 1, options.as_ptr(), &mut p) });
    let mut got = vec![vec![0f32; 10]; inputs.len()];
    let (mut xs, mut ys) = (vec![[1i64, 3, 32, 32]; inputs.len()], vec![[1i64, 10]; inputs.len()]);
    let mut ids = Vec::new();
    for ((x, y), (xs, ys)) in inputs.iter_mut().zip(&mut got).zip(xs.iter_mut().zip(&mut ys)) {
        let (xt, mut yt) = (host(x, xs), host(y, ys));
        let mut id = 0;
        ok(unsafe { TVMPipelineSubmit(p, &xt, 1, &mut yt, 1, &mut id) });
        ids.push(id);
    }
    for id in ids {
        ok(unsafe { TVMPipelineWait(p, id) });
    }
    assert_eq!(got, want, "every request's output as the synchronous executor's");
    ok(unsafe { TVMPipelineFree(p) });
}

/// A graph that mixes host and device, as TVM's heterogeneous builds write one: `x` on the CPU,
/// `__copy` to OpenCL, apache-tvm 0.27's `scale_dyn` kernel twice there, `__copy` back; storage
/// on each entry's device by `device_index`; the executor given both devices. Against plain
/// loops.
#[test]
fn copy_nodes_move_data_between_host_and_device() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let (cpu, cl) = (device_type::CPU, device_type::OPENCL);
    let node = |name: &str, func: &str, input: usize| {
        serde_json::json!({"op": "tvm_op", "name": name, "inputs": [[input, 0, 0]],
            "attrs": {"num_outputs": "1", "num_inputs": "1", "flatten_data": "0", "func_name": func}})
    };
    let n = 1000;
    let json = serde_json::json!({
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            node("to_device", "__copy", 0), node("scale_0", "scale_dyn", 1),
            node("scale_1", "scale_dyn", 2), node("to_host", "__copy", 3),
        ],
        "arg_nodes": [0], "heads": [[4, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4, 5],
        "attrs": {
            "dltype": ["list_str", vec!["float32"; 5]],
            "device_index": ["list_int", [cpu, cl, cl, cl, cpu]],
            "storage_id": ["list_int", [0, 1, 2, 1, 3]],
            "shape": ["list_shape", vec![[n]; 5]],
        },
    });
    let graph = tvm_runtime::graph::Graph::parse(&json.to_string()).unwrap();
    let plan = tvm_runtime::graph::memory_plan::build_plan(
        graph,
        library("scale_dyn"),
        &[DLDevice::cpu(0), dev],
        tvm_runtime::graph::options::MemoryPlan::Tvm,
    )
    .unwrap();
    let mut exec = tvm_runtime::graph::Executor::new(std::sync::Arc::new(plan)).unwrap();
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 7.0).collect();
    let want: Vec<f32> = x.iter().map(|v| (v * 2.0 + 0.5) * 2.0 + 0.5).collect();
    let input = NDArray::from_bytes(&[n as i64], F32, &floats(&x)).unwrap();
    exec.set_input(0, input.tensor()).unwrap();
    exec.run().unwrap();
    let y = exec.get_output(0).unwrap();
    assert_eq!(y.device(), DLDevice::cpu(0), "the output entry is on the host");
    assert_eq!(read(&y), want);
    assert_eq!(exec.get_entry(2).unwrap().device(), dev, "the kernels' entries are on the device");
}

/// TVM 0.18's `runtime.module.loadfile_cl` (and `TVMModLoadFromFile(path, "cl")`): OpenCL C in a
/// `.cl` file with its kernels' table in the `.tvm_meta.json` TVM writes beside it (both names of
/// the launch tags' field); a missing meta file or a bad type names the file and the field.
#[test]
fn a_cl_file_with_its_meta_file_loads_and_runs() {
    let _one = ONE_AT_A_TIME.lock();
    let Some(dev) = device() else { return };
    let dir = std::env::temp_dir().join(format!("tvm-rt-opencl-cl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = "__kernel void twice(__global float* restrict a, __global float* restrict b) {\n  \
                  b[get_global_id(0)] = a[get_global_id(0)] * 2.0f;\n}\n";
    let cl = dir.join("twice.cl");
    std::fs::write(&cl, source).unwrap();
    let load = |path: &std::path::Path| Module::load_from_file(path.to_str().unwrap(), "cl");
    let err = load(&cl).err().expect("no meta file yet");
    assert!(err.to_string().contains("twice.tvm_meta.json"), "{err}");
    for field in ["launch_param_tags", "thread_axis_tags"] {
        let meta = serde_json::json!({"tvm_version": "0.1.0", "func_info": {"twice": {
            "name": "twice", "arg_types": ["handle", "handle"], field: ["blockIdx.x", "threadIdx.x"]}}});
        std::fs::write(dir.join("twice.tvm_meta.json"), meta.to_string()).unwrap();
        let m = load(&cl).unwrap();
        let data: Vec<f32> = (0..256).map(|i| i as f32).collect();
        let (a, b) = (on_device(dev, &data, &[256]), NDArray::empty(&[256], F32, dev).unwrap());
        let twice = m.get_function("twice", false).unwrap().expect("the kernel");
        twice.call(&[Value::Handle(a.data_ptr()), Value::Handle(b.data_ptr()), Value::Int(4), Value::Int(64)]).unwrap();
        assert_eq!(read(&b), data.iter().map(|v| v * 2.0).collect::<Vec<_>>(), "{field}");
    }
    let meta = r#"{"tvm_version": "0.1.0", "func_info": {"twice": {"name": "twice", "arg_types": ["floaty"]}}}"#;
    std::fs::write(dir.join("twice.tvm_meta.json"), meta).unwrap();
    let err = load(&cl).err().expect("a bad type");
    assert!(err.to_string().contains("func_info.twice") && err.to_string().contains("floaty"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
