//! The device layer on OpenCL (runtime/device/opencl/): memory, copies, streams, events and
//! their faults, on this machine's OpenCL platform (PoCL in CI, installed by .ci/run); each test
//! says it is skipped, and passes, where there is none.

use parking_lot::Mutex;
use tvm_runtime::abi::{device_type, DLDataType, DLDevice};
use tvm_runtime::runtime::device::device_api;
use tvm_runtime::runtime::device::opencl::{driver, live_buffers};
use tvm_runtime::runtime::dlpack::tensor_ref::TensorRef;
use tvm_runtime::runtime::tensor::ndarray::{copy_from_to, copy_from_to_on};
use tvm_runtime::runtime::NDArray;

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
