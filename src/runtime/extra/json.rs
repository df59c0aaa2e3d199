//! tvm-ffi's JSON values and text (`ffi.json.Parse`, `ffi.json.Stringify`): a JSON value is a
//! tvm-ffi value — `None`, `bool`, `int`, `float`, `ffi.String`, `ffi.Array` (or `ffi.List`)
//! of values, `ffi.Map` from strings to values. Objects keep their keys' order. Numbers without
//! a fraction or exponent that fit 64 bits are integers; `NaN`, `Infinity` and `-Infinity` are
//! read and written as tvm-ffi writes them; integral floats are written with `.0`, others with
//! 17 significant digits.

use crate::runtime::base::error::{Error, Result};
use crate::runtime::collections::list_map::{map_cell, new_map, release_all, text_of};
use crate::runtime::function::packed::{PackedFunc, Value};
use crate::runtime::object::{header::ObjectRef, type_table::type_index as ti};

/// How deep arrays and objects may nest in parsed text.
const MAX_DEPTH: usize = 1024;

/// The value `text` holds.
pub fn parse(text: &str) -> Result<Value> {
    let mut p = Parser { s: text.as_bytes(), at: 0 };
    let v = p.value(0)?;
    p.skip_space();
    if p.at != p.s.len() {
        return Err(p.error("unexpected text after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn error(&self, what: &str) -> Error {
        Error::value(format!("JSON parse error at position {}: {what}", self.at))
    }

    fn skip_space(&mut self) {
        while self.at < self.s.len() && matches!(self.s[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    fn eat(&mut self, word: &str) -> bool {
        let w = word.as_bytes();
        if self.s[self.at..].starts_with(w) {
            self.at += w.len();
            return true;
        }
        false
    }

    fn value(&mut self, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(self.error("nesting too deep"));
        }
        self.skip_space();
        let Some(&c) = self.s.get(self.at) else { return Err(self.error("unexpected end of text")) };
        match c {
            b'n' if self.eat("null") => Ok(Value::Null),
            b't' if self.eat("true") => Ok(Value::Bool(true)),
            b'f' if self.eat("false") => Ok(Value::Bool(false)),
            b'N' if self.eat("NaN") => Ok(Value::Float(f64::NAN)),
            b'I' if self.eat("Infinity") => Ok(Value::Float(f64::INFINITY)),
            b'-' if self.eat("-Infinity") => Ok(Value::Float(f64::NEG_INFINITY)),
            b'"' => Ok(Value::Str(self.string()?)),
            b'[' => self.array(depth),
            b'{' => self.object(depth),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.error(&format!("unexpected character {:?}", c as char))),
        }
    }

    fn number(&mut self) -> Result<Value> {
        let start = self.at;
        let mut float = false;
        while let Some(&c) = self.s.get(self.at) {
            match c {
                b'0'..=b'9' | b'-' | b'+' => {}
                b'.' | b'e' | b'E' => float = true,
                _ => break,
            }
            self.at += 1;
        }
        let text = std::str::from_utf8(&self.s[start..self.at]).map_err(|_| self.error("bad number"))?;
        if !float {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Int(i));
            }
        }
        text.parse::<f64>().map(Value::Float).map_err(|_| self.error(&format!("bad number `{text}`")))
    }

    fn hex4(&mut self) -> Result<u32> {
        let h = self.s.get(self.at..self.at + 4).ok_or_else(|| self.error("short \\u escape"))?;
        let v = std::str::from_utf8(h).ok().and_then(|h| u32::from_str_radix(h, 16).ok());
        self.at += 4;
        v.ok_or_else(|| self.error("bad \\u escape"))
    }

    fn escape(&mut self, out: &mut Vec<u8>) -> Result<()> {
        let c = *self.s.get(self.at).ok_or_else(|| self.error("unterminated escape"))?;
        self.at += 1;
        let ch = match c {
            b'"' | b'\\' | b'/' => c as char,
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let mut u = self.hex4()?;
                if (0xD800..0xDC00).contains(&u) && self.eat("\\u") {
                    let lo = self.hex4()?;
                    u = 0x10000 + ((u - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF);
                }
                char::from_u32(u).ok_or_else(|| self.error("bad \\u escape"))?
            }
            _ => return Err(self.error(&format!("bad escape \\{}", c as char))),
        };
        out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
        Ok(())
    }

    fn string(&mut self) -> Result<String> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let c = *self.s.get(self.at).ok_or_else(|| self.error("unterminated string"))?;
            self.at += 1;
            match c {
                b'"' => break,
                b'\\' => self.escape(&mut out)?,
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.error("string is not valid UTF-8"))
    }

    /// Items up to `close`, separated by commas, each read by `item`.
    fn items(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        self.at += 1;
        self.skip_space();
        if self.s.get(self.at) == Some(&close) {
            self.at += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            self.skip_space();
            match self.s.get(self.at) {
                Some(b',') => self.at += 1,
                Some(&c) if c == close => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(self.error(&format!("expected ',' or '{}'", close as char))),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value> {
        let mut items = Vec::new();
        let parsed = self.items(b']', |p| {
            items.push(p.value(depth + 1)?.into_any());
            Ok(())
        });
        if let Err(e) = parsed {
            release_all(items);
            return Err(e);
        }
        Ok(Value::Object(crate::runtime::container::FfiArrayObj::new(items).to_object_ref()))
    }

    fn object(&mut self, depth: usize) -> Result<Value> {
        let mut pairs = Vec::new();
        let parsed = self.items(b'}', |p| {
            p.skip_space();
            if p.s.get(p.at) != Some(&b'"') {
                return Err(p.error("expected a string key"));
            }
            // Both made owned values only once both parsed, so that an error leaves none behind.
            let key = p.string()?;
            p.skip_space();
            if !p.eat(":") {
                return Err(p.error("expected ':'"));
            }
            let value = p.value(depth + 1)?;
            pairs.push((Value::Str(key).into_any(), value.into_any()));
            Ok(())
        });
        if let Err(e) = parsed {
            release_all(pairs.into_iter().flat_map(|(k, v)| [k, v]).collect());
            return Err(e);
        }
        Ok(Value::Object(new_map::<{ ti::FFI_MAP }>(pairs)?))
    }
}

/// `v` as JSON text, indented by `indent` spaces per level when above 0.
pub fn stringify(v: &Value, indent: usize) -> Result<String> {
    let mut out = String::new();
    write_value(v, indent, 0, &mut out)?;
    Ok(out)
}

fn write_float(f: f64, out: &mut String) {
    if f.is_nan() {
        out.push_str("NaN");
    } else if f.is_infinite() {
        out.push_str(if f < 0.0 { "-Infinity" } else { "Infinity" });
    } else if f.fract() == 0.0 && f.abs() < (1u64 << 53) as f64 {
        out.push_str(&format!("{f:.1}"));
    } else {
        // 17 significant digits, as C's %.17g writes them.
        let s = format!("{f:.16e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        if (-5..17).contains(&e) {
            let digits = format!("{:.*}", (16 - e).max(0) as usize, f);
            let digits = if digits.contains('.') {
                digits.trim_end_matches('0').trim_end_matches('.').to_string()
            } else {
                digits
            };
            out.push_str(&digits);
        } else {
            let m = if m.contains('.') { m.trim_end_matches('0').trim_end_matches('.') } else { m };
            out.push_str(&format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()));
        }
    }
}

fn newline(indent: usize, level: usize, out: &mut String) {
    if indent > 0 {
        out.push('\n');
        out.push_str(&" ".repeat(indent * level));
    }
}

/// Writes `items` between `open` and `close`, each by `each`.
fn write_group<T>(
    items: &[T],
    (open, close): (char, char),
    indent: usize,
    level: usize,
    out: &mut String,
    mut each: impl FnMut(&T, &mut String) -> Result<()>,
) -> Result<()> {
    out.push(open);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(indent, level + 1, out);
        each(item, out)?;
    }
    newline(indent, level, out);
    out.push(close);
    Ok(())
}

fn write_value(v: &Value, indent: usize, level: usize, out: &mut String) -> Result<()> {
    if let Some(t) = text_of(v) {
        out.push_str(&crate::runtime::reflection::records::json_string(&String::from_utf8_lossy(&t)));
        return Ok(());
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => write_float(*f, out),
        Value::Object(o) => write_object(o, indent, level, out)?,
        other => return Err(Error::value(format!("Unsupported type: `{}`", other.type_name()))),
    }
    Ok(())
}

fn write_object(o: &ObjectRef, indent: usize, level: usize, out: &mut String) -> Result<()> {
    if let Some(items) = crate::runtime::collections::list_map::sequence_items(o)? {
        return write_group(&items, ('[', ']'), indent, level, out, |v, out| write_value(v, indent, level + 1, out));
    }
    if o.type_index() == ti::FFI_MAP {
        let pairs = map_cell(o, |c| {
            // SAFETY: live entries of the locked cell.
            c.entries()
                .into_iter()
                .map(|kv| unsafe { Ok((Value::from_any_view(&(*kv).key)?, Value::from_any_view(&(*kv).value)?)) })
                .collect::<Result<Vec<_>>>()
        })?;
        return write_group(&pairs, ('{', '}'), indent, level, out, |(k, v), out| {
            let k = text_of(k).ok_or_else(|| Error::value("JSON object keys must be strings"))?;
            out.push_str(&crate::runtime::reflection::records::json_string(&String::from_utf8_lossy(&k)));
            out.push_str(if indent > 0 { ": " } else { ":" });
            write_value(v, indent, level + 1, out)
        });
    }
    Err(Error::value(format!("Unsupported type: `{}`", crate::runtime::collections::list_map::type_name(o))))
}

pub(crate) fn globals() -> Vec<(&'static str, PackedFunc)> {
    vec![
        ("ffi.json.Parse", PackedFunc::from_typed(|args| parse(&args.string(0)?))),
        (
            "ffi.json.Stringify",
            PackedFunc::from_typed(|args| {
                let indent = match args.len() {
                    n if n > 1 => match args.to_value(1)? {
                        Value::Null => 0,
                        v => {
                            usize::try_from(v.as_int()?).map_err(|_| Error::value("argument 1: indent is negative"))?
                        }
                    },
                    _ => 0,
                };
                Ok(Value::Str(stringify(&args.to_value(0)?, indent)?))
            }),
        ),
    ]
}
