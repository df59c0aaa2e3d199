//! The sequence model (examples/demo/seq_model.rs): built at two lengths, run through the C API,
//! checked against the f64 reference, and the shorter version's results found bit for bit in
//! the first rows of the longer one's (what a bucketed executor padding sequences relies on).

#[path = "../examples/demo/capi.rs"]
mod capi;
#[path = "../examples/demo/model.rs"]
mod model;
#[path = "../examples/demo/seq_model.rs"]
mod seq_model;

use capi::{Executor, Library};
use seq_model::SeqSpec;

const TOL: f32 = 1e-4;

/// `(out, attn)` of one run.
fn run(exec: &mut Executor, spec: &SeqSpec, tokens: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let (b, s, h) = (spec.batch, spec.seq_len, spec.hidden);
    let (mut out, mut attn) = (vec![0f32; b * s * h], vec![0f32; b * s * s]);
    exec.set_input(seq_model::SEQ_INPUT_NAME, tokens, &spec.input_shape()).unwrap();
    exec.run().unwrap();
    exec.get_output(seq_model::OUT_INDEX, &mut out, &spec.out_shape()).unwrap();
    exec.get_output(seq_model::ATTN_INDEX, &mut attn, &spec.attn_shape()).unwrap();
    (out, attn)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn check_reference(spec: &SeqSpec, tokens: &[f32], got: &(Vec<f32>, Vec<f32>), what: &str) {
    let (out, attn) = seq_model::reference_seq(spec, tokens);
    let d_out = model::max_abs_diff(&got.0, &out);
    let d_attn = model::max_abs_diff(&got.1, &attn);
    assert!(d_out < TOL && d_attn < TOL, "{what}: max |diff| vs reference: out {d_out:e}, attn {d_attn:e}");
}

/// The attention is causal: zero above the diagonal, rows summing to 1.
fn check_causal(spec: &SeqSpec, attn: &[f32], what: &str) {
    let s = spec.seq_len;
    for (i, row) in attn.chunks(s).enumerate() {
        assert!(row[i + 1..].iter().all(|&p| p == 0.0), "{what}: row {i} attends ahead: {row:?}");
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "{what}: row {i} sums to {sum}");
    }
}

#[test]
fn lengths_share_weights_and_token_prefixes() {
    let (s5, s8) = (SeqSpec::small().with_seq_len(5), SeqSpec::small().with_seq_len(8));
    assert_eq!((s5.name.as_str(), s8.name.as_str()), ("seq_s5", "seq_s8"));
    assert_eq!(s8.with_seq_len(5), s5);
    assert_eq!(model::params_blob_of(&seq_model::seq_params(&s5)), model::params_blob_of(&seq_model::seq_params(&s8)));
    let (t5, t8) = (seq_model::tokens_for(&s5, 3), seq_model::tokens_for(&s8, 3));
    assert_eq!(t5[..], t8[..t5.len()]);
}

#[test]
fn graph_has_two_heads_and_the_kernels_are_exported() {
    let spec = SeqSpec::small().with_seq_len(5);
    let g: serde_json::Value = serde_json::from_str(&seq_model::seq_graph_json(&spec)).unwrap();
    let nodes = g["nodes"].as_array().unwrap();
    let heads: Vec<usize> = g["heads"].as_array().unwrap().iter().map(|h| h[0].as_u64().unwrap() as usize).collect();
    assert_eq!(heads.len(), 2);
    assert_eq!(nodes[heads[0]]["name"], "tvmgen_default_fused_nn_dense_add_add_1");
    assert_eq!(nodes[heads[1]]["name"], "tvmgen_default_fused_nn_batch_matmul_divide_where_nn_softmax");
    let shapes = g["attrs"]["shape"][1].as_array().unwrap();
    assert_eq!(shapes[heads[0]], serde_json::json!([1, 5, 32]));
    assert_eq!(shapes[heads[1]], serde_json::json!([1, 5, 5]));
    let sids = g["attrs"]["storage_id"][1].as_array().unwrap();
    assert_ne!(sids[heads[0]], sids[heads[1]], "the two outputs share storage");
    assert_eq!(seq_model::seq_kernel_names(&spec).len(), 8);
}

#[test]
fn longer_sequence_prefix_is_bit_identical_and_matches_the_reference() {
    let (s5, s8) = (SeqSpec::small().with_seq_len(5), SeqSpec::small().with_seq_len(8));
    let (lib5, lib8) = (
        Library::load(&seq_model::build_seq(&s5).unwrap_or_else(|e| panic!("building {}: {e}", s5.name))).unwrap(),
        Library::load(&seq_model::build_seq(&s8).unwrap_or_else(|e| panic!("building {}: {e}", s8.name))).unwrap(),
    );
    let (mut exec5, mut exec8) = (Executor::new(&lib5).unwrap(), Executor::new(&lib8).unwrap());
    let h = s5.hidden;
    for seed in [0u64, 7, 21] {
        let t5 = seq_model::tokens_for(&s5, seed);
        // The 3 tokens past the shorter length: another sequence's, so they differ from a rerun.
        let mut t8 = seq_model::tokens_for(&s8, seed + 1000);
        t8[..5 * h].copy_from_slice(&t5);
        let (r5, r8) = (run(&mut exec5, &s5, &t5), run(&mut exec8, &s8, &t8));
        check_reference(&s5, &t5, &r5, &format!("S=5, seed {seed}"));
        check_reference(&s8, &t8, &r8, &format!("S=8, seed {seed}"));
        check_causal(&s5, &r5.1, &format!("S=5, seed {seed}"));
        check_causal(&s8, &r8.1, &format!("S=8, seed {seed}"));
        assert_eq!(bits(&r8.0[..5 * h]), bits(&r5.0), "seed {seed}: first 5 rows of out");
        for i in 0..5 {
            assert_eq!(bits(&r8.1[i * 8..i * 8 + 5]), bits(&r5.1[i * 5..i * 5 + 5]), "seed {seed}: attn row {i}");
        }
    }
}

#[test]
fn a_batch_of_sequences_is_each_sequence_alone_bit_for_bit() {
    // Length 6: the other tests build length 5 and 8 at the same time, into the same files.
    let one = SeqSpec::small().with_seq_len(6);
    let three = one.with_batch(3);
    assert_eq!((three.name.as_str(), three.input_shape()), ("seq_b3_s6", [3, 6, 32]));
    assert_eq!(three.with_seq_len(8).name, "seq_b3_s8");
    assert_eq!(three.with_batch(1), one);
    let build = |s: &SeqSpec| Library::load(&seq_model::build_seq(s).unwrap_or_else(|e| panic!("{}: {e}", s.name)));
    let (lib1, lib3) = (build(&one).unwrap(), build(&three).unwrap());
    let (mut exec1, mut exec3) = (Executor::new(&lib1).unwrap(), Executor::new(&lib3).unwrap());
    let seqs: Vec<Vec<f32>> = [4u64, 9, 30].iter().map(|&seed| seq_model::tokens_for(&one, seed)).collect();
    let batch = run(&mut exec3, &three, &seqs.concat());
    check_reference(&three, &seqs.concat(), &batch, "a batch of 3");
    let (out_len, attn_len) = (one.input_len(), 6 * 6);
    for (k, tokens) in seqs.iter().enumerate() {
        let alone = run(&mut exec1, &one, tokens);
        assert_eq!(bits(&batch.0[k * out_len..(k + 1) * out_len]), bits(&alone.0), "sequence {k}: out");
        assert_eq!(bits(&batch.1[k * attn_len..(k + 1) * attn_len]), bits(&alone.1), "sequence {k}: attn");
    }
}
