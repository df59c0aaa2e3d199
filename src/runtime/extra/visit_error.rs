//! `ffi.VisitErrorContext.FindAccessPaths`: where in a value an error raised during a recursive
//! visit happened. The error's visit context lists the nodes the visit was inside, innermost
//! first (code built on tvm-ffi's headers records them as the error passes each level); the
//! paths from the root to every node at which that chain ends are found by walking the root's
//! structure (objects' reflected fields, sequences' items, maps' values), as tvm-ffi does. A
//! compiler reports a failed pass's error at those places (TVM's pass infrastructure asks).

use crate::runtime::base::error::{Error, Result};
use crate::runtime::collections::list_map::{map_items, sequence_items};
use crate::runtime::extra::record_methods::access_path;
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::{header::ObjectRef, type_table::type_index as ti};
use crate::runtime::reflection::fields::named_field_values;

/// Access step kinds (tvm-ffi's `AccessKind`).
const ATTR: i64 = 0;
const ARRAY_ITEM: i64 = 1;
const MAP_ITEM: i64 = 2;

struct Finder {
    /// The visit's nodes, innermost first, runs of one node and undefined ones dropped.
    records: Vec<ObjectRef>,
    /// Records matched so far along the current descent (outermost first).
    matched: usize,
    /// The steps from the root to the current value.
    steps: Vec<(i64, Value)>,
    /// With `allow_prefix`, a node matching part of the chain with nothing matched below it is
    /// reported too.
    allow_prefix: bool,
    found: Vec<Value>,
}

impl Finder {
    fn visit(&mut self, v: &Value) -> Result<()> {
        let Value::Object(o) = v else { return Ok(()) };
        match o.type_index() {
            ti::FFI_ARRAY | ti::LIST => {
                for (i, item) in sequence_items(o)?.unwrap_or_default().iter().enumerate() {
                    self.descend((ARRAY_ITEM, Value::Int(i as i64)), item)?;
                }
            }
            ti::FFI_MAP | ti::DICT => {
                for (k, item) in map_items(o)? {
                    self.descend((MAP_ITEM, k), &item)?;
                }
            }
            _ => self.visit_object(o)?,
        }
        Ok(())
    }

    fn descend(&mut self, step: (i64, Value), v: &Value) -> Result<()> {
        if matches!(v, Value::Null) {
            return Ok(());
        }
        self.steps.push(step);
        let r = self.visit(v);
        self.steps.pop();
        r
    }

    fn visit_object(&mut self, o: &ObjectRef) -> Result<()> {
        // As tvm-ffi's finder: a type without reflection metadata (a string, say) is neither
        // matched nor descended.
        let info = crate::runtime::reflection::type_info::type_info(o.type_index())?;
        // SAFETY: type information stays valid for the process.
        if unsafe { (*info).metadata.is_null() } {
            return Ok(());
        }
        let next = self.records.len().checked_sub(self.matched + 1).map(|i| &self.records[i]);
        let matched = next.is_some_and(|r| r.as_header() == o.as_header());
        if matched {
            self.matched += 1;
            if self.matched == self.records.len() {
                self.found.push(self.path()?);
                self.matched -= 1;
                return Ok(());
            }
        }
        let before = self.found.len();
        for (name, _, value) in named_field_values(o)? {
            self.descend((ATTR, Value::Str(name)), &value)?;
        }
        let partial = self.allow_prefix && self.matched > 0 && !self.steps.is_empty();
        if partial && self.found.len() == before {
            self.found.push(self.path()?);
        }
        if matched {
            self.matched -= 1;
        }
        Ok(())
    }

    /// The access path of the current value.
    fn path(&self) -> Result<Value> {
        let mut p = Value::Object(access_path::root()?);
        for (kind, key) in &self.steps {
            let Value::Object(parent) = &p else { unreachable!("paths are objects") };
            p = access_path::extend(parent, access_path::step(*kind, key.clone())?)?;
        }
        Ok(p)
    }
}

/// The nodes an `ffi.VisitErrorContext` names, innermost first, as the finder matches them.
fn records(context: &ObjectRef) -> Result<Vec<ObjectRef>> {
    let fields = named_field_values(context)?;
    let pattern = fields.iter().find(|(name, _, _)| name == "reverse_visit_pattern");
    let Some((_, _, Value::Object(list))) = pattern else {
        return Err(Error::type_error("argument 1: expected an ffi.VisitErrorContext"));
    };
    let mut out: Vec<ObjectRef> = Vec::new();
    for v in sequence_items(list)?.unwrap_or_default() {
        if let Value::Object(o) = v {
            if out.last().is_none_or(|last| last.as_header() != o.as_header()) {
                out.push(o);
            }
        }
    }
    Ok(out)
}

fn find_access_paths(root: Value, context: &ObjectRef, allow_prefix: bool) -> Result<Value> {
    let mut f = Finder { records: records(context)?, matched: 0, steps: Vec::new(), allow_prefix, found: Vec::new() };
    if !f.records.is_empty() {
        f.visit(&root)?;
    }
    let items = f.found.into_iter().map(Value::into_any).collect();
    Ok(Value::Object(crate::runtime::container::FfiArrayObj::new(items).to_object_ref()))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![(
        "ffi.VisitErrorContext.FindAccessPaths",
        PackedFunc::from_typed(|a| find_access_paths(a.to_value(0)?, &a.object(1)?, a.to_value(2)?.as_int()? != 0)),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::collections::list_map::ListObj;
    use crate::runtime::object::header::ObjPtr;
    use crate::runtime::reflection::records::{new_record, set_field};

    /// A node to find: an access step record whose `key` holds `inner`.
    fn node(inner: Value) -> ObjectRef {
        let r = new_record("ffi.reflection.AccessStep").unwrap();
        set_field(&r, "key", inner).unwrap();
        r.to_object_ref()
    }

    fn context(innermost_first: &[&ObjectRef]) -> ObjectRef {
        let items = innermost_first.iter().map(|o| Value::Object((*o).clone()).into_any()).collect();
        let list = ObjPtr::new(ListObj::new(items).unwrap()).to_object_ref();
        let c = new_record("ffi.VisitErrorContext").unwrap();
        set_field(&c, "reverse_visit_pattern", Value::Object(list)).unwrap();
        c.to_object_ref()
    }

    /// A found path as `(kind, key)` steps from the root.
    fn steps(path: &Value) -> Vec<(i64, String)> {
        let mut out = Vec::new();
        let Value::Object(mut at) = path.clone() else { panic!("a path") };
        loop {
            let f = named_field_values(&at).unwrap();
            let (Value::Object(parent), Value::Object(step)) = (&f[0].2, &f[1].2) else { break };
            let s = named_field_values(step).unwrap();
            out.push((s[0].2.as_int().unwrap(), format!("{:?}", s[1].2)));
            at = parent.clone();
        }
        out.reverse();
        out
    }

    fn find(root: &Value, ctx: &ObjectRef, prefix: bool) -> Vec<Vec<(i64, String)>> {
        let Value::Object(found) = find_access_paths(root.clone(), ctx, prefix).unwrap() else { panic!("an array") };
        sequence_items(&found).unwrap().unwrap().iter().map(steps).collect()
    }

    #[test]
    fn the_chain_of_visited_nodes_is_found_under_the_root() {
        let inner = node(Value::Int(7));
        let outer = node(Value::Object(inner.clone()));
        let items = vec![Value::Int(1).into_any(), Value::Object(outer.clone()).into_any()];
        let root = Value::Object(crate::runtime::container::FfiArrayObj::new(items).to_object_ref());
        let want =
            vec![vec![(ARRAY_ITEM, format!("{:?}", Value::Int(1))), (ATTR, format!("{:?}", Value::Str("key".into())))]];
        // Innermost first, a repeated frame counted once.
        assert_eq!(find(&root, &context(&[&inner, &inner, &outer]), false), want);
        let elsewhere = node(Value::Null);
        assert!(find(&root, &context(&[&elsewhere, &outer]), false).is_empty(), "the chain must end");
        // A prefix match reports the objects below the matched part that nothing deeper matched
        // (here `inner`, under the matched `outer`), as tvm-ffi's finder does.
        assert_eq!(find(&root, &context(&[&elsewhere, &outer]), true), want, "a prefix");
        assert!(find(&root, &context(&[]), true).is_empty());
    }

    #[test]
    fn paths_are_written_as_tvm_ffi_writes_them() {
        crate::runtime::builtins::install();
        let inner = node(Value::Int(7));
        let outer = node(Value::Object(inner.clone()));
        let items = vec![Value::Str("x".into()).into_any(), Value::Object(outer.clone()).into_any()];
        let root = Value::Object(crate::runtime::container::FfiArrayObj::new(items).to_object_ref());
        let Value::Object(found) = find_access_paths(root, &context(&[&inner, &outer]), false).unwrap() else {
            panic!("an array")
        };
        let paths = sequence_items(&found).unwrap().unwrap();
        assert_eq!(crate::runtime::extra::repr::repr(&paths[0]).unwrap(), "<root>[1].key");
    }
}
