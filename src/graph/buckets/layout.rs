//! What varies between the versions of one model: read from the versions' own tensor shapes.
//! An input axis whose extent differs between versions is a dynamic axis (a *dim*); an output
//! axis that differs follows the dims whose extents equal its own in every version. Anything
//! else that differs (names, dtypes, ranks, weight shapes, static extents) is refused with a
//! message naming the difference.

use super::super::plan::Plan;
use crate::abi::DLDataType;
use crate::runtime::base::error::{Error, Result};

/// One input or output tensor of a version.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSig {
    pub name: String,
    pub dtype: DLDataType,
    pub shape: Vec<i64>,
    /// An input whose value is a weight of the artifact (a param).
    pub is_param: bool,
}

/// The tensors of one version, with a label naming it in messages.
#[derive(Clone, Debug)]
pub struct Signature {
    pub label: String,
    pub inputs: Vec<TensorSig>,
    pub outputs: Vec<TensorSig>,
}

impl Signature {
    pub fn of(plan: &Plan, label: String) -> Signature {
        let sig = |name: String, eid: usize, is_param: bool| TensorSig {
            name,
            dtype: plan.entry_dtype(eid),
            shape: plan.entry_shape(eid).to_vec(),
            is_param,
        };
        let inputs = (0..plan.num_inputs())
            .map(|i| sig(plan.input_name(i).to_string(), plan.input_entry(i), plan.is_param_input(i)))
            .collect();
        let outputs = (0..plan.num_outputs()).map(|i| sig(plan.output_name(i), plan.output_entry(i), false)).collect();
        Signature { label, inputs, outputs }
    }
}

/// A dynamic axis: axis `axis` of input `input`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim {
    pub input: usize,
    pub axis: usize,
}

/// A dynamic output axis and the dims its true extent comes from (they must agree at run time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputAxis {
    pub axis: usize,
    pub dims: Vec<usize>,
}

/// What varies between the versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub dims: Vec<Dim>,
    /// Per version, in the order given, the extent of each dim.
    pub extents: Vec<Vec<i64>>,
    /// Per output, its dynamic axes.
    pub output_axes: Vec<Vec<OutputAxis>>,
}

/// Read the layout from the versions' signatures (at least one).
pub fn analyze(versions: &[Signature]) -> Result<Layout> {
    let Some(first) = versions.first() else {
        return Err(Error::value("bucketed executor: no versions of the model were given"));
    };
    for v in &versions[1..] {
        same_tensors("input", first, v, |s| &s.inputs)?;
        same_tensors("output", first, v, |s| &s.outputs)?;
    }
    let dims = input_dims(versions)?;
    let extents: Vec<Vec<i64>> =
        versions.iter().map(|v| dims.iter().map(|d| v.inputs[d.input].shape[d.axis]).collect()).collect();
    no_duplicates(versions, &extents)?;
    let output_axes =
        (0..first.outputs.len()).map(|o| output_axes(versions, &dims, &extents, o)).collect::<Result<_>>()?;
    Ok(Layout { dims, extents, output_axes })
}

/// The versions have the same tensors (count, names, dtypes, ranks, weight or data).
fn same_tensors(kind: &str, a: &Signature, b: &Signature, of: fn(&Signature) -> &Vec<TensorSig>) -> Result<()> {
    let differ =
        |what: String| Err(Error::value(format!("bucketed executor: {} and {} differ: {what}", a.label, b.label)));
    let (ta, tb) = (of(a), of(b));
    if ta.len() != tb.len() {
        return differ(format!("{} {kind}s against {}", ta.len(), tb.len()));
    }
    for (i, (x, y)) in ta.iter().zip(tb).enumerate() {
        if x.name != y.name {
            return differ(format!("{kind} {i} is `{}` in one and `{}` in the other", x.name, y.name));
        }
        if x.dtype != y.dtype {
            return differ(format!("{kind} `{}` has dtype {} against {}", x.name, x.dtype, y.dtype));
        }
        if x.shape.len() != y.shape.len() {
            return differ(format!("{kind} `{}` has {} axes against {}", x.name, x.shape.len(), y.shape.len()));
        }
        if x.is_param != y.is_param {
            return differ(format!("{kind} `{}` is a weight in only one of them", x.name));
        }
    }
    Ok(())
}

/// Extents of axis `axis` of tensor `t` in every version.
fn extents_of(versions: &[Signature], t: impl Fn(&Signature) -> &TensorSig, axis: usize) -> Vec<i64> {
    versions.iter().map(|v| t(v).shape[axis]).collect()
}

/// The input axes whose extents differ; weights must not have any.
fn input_dims(versions: &[Signature]) -> Result<Vec<Dim>> {
    let mut dims = Vec::new();
    for (input, sig) in versions[0].inputs.iter().enumerate() {
        for axis in 0..sig.shape.len() {
            let ext = extents_of(versions, |v| &v.inputs[input], axis);
            if ext.iter().all(|&e| e == ext[0]) {
                continue;
            }
            if sig.is_param {
                let k = ext.iter().position(|&e| e != ext[0]).expect("differs");
                return Err(Error::value(format!(
                    "bucketed executor: weight `{}` axis {axis} is {} in {} but {} in {}: weights must be the same in every version",
                    sig.name, ext[0], versions[0].label, ext[k], versions[k].label
                )));
            }
            dims.push(Dim { input, axis });
        }
    }
    Ok(dims)
}

/// Two versions with the same input shapes would be the same bucket.
fn no_duplicates(versions: &[Signature], extents: &[Vec<i64>]) -> Result<()> {
    for (j, e) in extents.iter().enumerate() {
        if let Some(i) = extents[..j].iter().position(|x| x == e) {
            return Err(Error::value(format!(
                "bucketed executor: {} and {} have the same input shapes (one bucket given twice?)",
                versions[i].label, versions[j].label
            )));
        }
    }
    Ok(())
}

/// The dynamic axes of output `o`: each follows the dims with the same extents in every
/// version, preferring dims on the same axis number (batch follows batch).
fn output_axes(versions: &[Signature], dims: &[Dim], extents: &[Vec<i64>], o: usize) -> Result<Vec<OutputAxis>> {
    let sig = &versions[0].outputs[o];
    let mut axes = Vec::new();
    for axis in 0..sig.shape.len() {
        let ext = extents_of(versions, |v| &v.outputs[o], axis);
        if ext.iter().all(|&e| e == ext[0]) {
            continue;
        }
        let follows: Vec<usize> =
            (0..dims.len()).filter(|&d| extents.iter().zip(&ext).all(|(v, &e)| v[d] == e)).collect();
        if follows.is_empty() {
            return Err(Error::value(format!(
                "bucketed executor: output `{}` axis {axis} has extents {ext:?} across the versions, which follow no input axis \
                 (an output axis that varies must equal a varying input axis in every version)",
                sig.name
            )));
        }
        let same_axis: Vec<usize> = follows.iter().copied().filter(|&d| dims[d].axis == axis).collect();
        axes.push(OutputAxis { axis, dims: if same_axis.is_empty() { follows } else { same_axis } });
    }
    Ok(axes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(name: &str, shape: &[i64]) -> TensorSig {
        TensorSig { name: name.into(), dtype: DLDataType::FLOAT32, shape: shape.to_vec(), is_param: false }
    }

    fn w(name: &str, shape: &[i64]) -> TensorSig {
        TensorSig { is_param: true, ..t(name, shape) }
    }

    /// A model with `ids [b, s]`, `mask [b, s]`, weight `w [4, 4]`, outputs `y [b, s, 4]` and
    /// `pooled [b, 4]`.
    fn version(b: i64, s: i64) -> Signature {
        Signature {
            label: format!("b{b}s{s}"),
            inputs: vec![t("ids", &[b, s]), t("mask", &[b, s]), w("w", &[4, 4])],
            outputs: vec![t("y", &[b, s, 4]), t("pooled", &[b, 4])],
        }
    }

    fn err(versions: &[Signature]) -> String {
        analyze(versions).unwrap_err().message().to_string()
    }

    #[test]
    fn finds_dims_and_what_outputs_follow() {
        let l = analyze(&[version(1, 8), version(2, 8), version(2, 16)]).unwrap();
        let d = |input, axis| Dim { input, axis };
        assert_eq!(l.dims, vec![d(0, 0), d(0, 1), d(1, 0), d(1, 1)]);
        assert_eq!(l.extents, vec![vec![1, 8, 1, 8], vec![2, 8, 2, 8], vec![2, 16, 2, 16]]);
        let a = |axis, dims: &[usize]| OutputAxis { axis, dims: dims.to_vec() };
        assert_eq!(l.output_axes, vec![vec![a(0, &[0, 2]), a(1, &[1, 3])], vec![a(0, &[0, 2])]]);
    }

    #[test]
    fn one_version_has_no_dims() {
        let l = analyze(&[version(1, 8)]).unwrap();
        assert!(l.dims.is_empty() && l.output_axes.iter().all(Vec::is_empty));
    }

    #[test]
    fn refuses_versions_that_differ_elsewhere() {
        let mut v = version(2, 8);
        v.inputs[1].name = "attention".into();
        assert!(err(&[version(1, 8), v]).contains("input 1 is `mask` in one and `attention` in the other"));
        let mut v = version(2, 8);
        v.inputs[0].dtype = DLDataType::new(0, 64, 1);
        assert!(err(&[version(1, 8), v]).contains("input `ids` has dtype"));
        let mut v = version(2, 8);
        v.inputs[2] = w("w", &[8, 4]);
        let e = err(&[version(1, 8), v]);
        assert!(e.contains("weight `w` axis 0 is 4 in b1s8 but 8 in b2s8"), "{e}");
        let mut v = version(2, 8);
        v.outputs.pop();
        assert!(err(&[version(1, 8), v]).contains("2 outputs against 1"));
        let mut v = version(2, 8);
        v.outputs[1].shape = vec![2, 5];
        let e = err(&[version(1, 8), v]);
        assert!(e.contains("output `pooled` axis 1 has extents [4, 5]"), "{e}");
        assert!(err(&[version(1, 8), version(1, 8)]).contains("b1s8 and b1s8 have the same input shapes"));
        assert!(err(&[]).contains("no versions"));
    }
}
