//! The order of equal elements that TVM's samplers see. They sort with C++'s `std::sort`, which
//! is not stable: past 16 elements, which of several equal probabilities comes first depends
//! on the algorithm (with every value equal, TVM's argmax of 17 values is index 8). To pick
//! the same token, [`sort`] orders exactly as GCC's libstdc++ does (the library apache-tvm's
//! wheels are built with): an introsort (median-of-three pivot, depth limit 2 log2 n, heapsort
//! past it) down to runs of 16, then one insertion sort.

/// Runs of this many elements or fewer are left to the final insertion sort.
const RUN: usize = 16;

/// Sorts `a` so that no element is `less` than one before it, equal elements in libstdc++'s
/// order.
pub fn sort<T: Copy>(a: &mut [T], less: impl Fn(&T, &T) -> bool) {
    if a.len() < 2 {
        return;
    }
    let depth = 2 * (usize::BITS - 1 - a.len().leading_zeros()) as usize;
    introsort(a, depth, &less);
    insertion_sort(a, &less);
}

fn introsort<T: Copy>(mut a: &mut [T], mut depth: usize, less: &impl Fn(&T, &T) -> bool) {
    while a.len() > RUN {
        if depth == 0 {
            heap_sort(a, less);
            return;
        }
        depth -= 1;
        let cut = partition(a, less);
        let (left, right) = a.split_at_mut(cut);
        introsort(right, depth, less);
        a = left;
    }
}

/// Moves the median of `a[1]`, the middle and the last element to the front, then partitions
/// the rest around it; the index where the upper part starts.
fn partition<T: Copy>(a: &mut [T], less: &impl Fn(&T, &T) -> bool) -> usize {
    let (x, y, z) = (1, a.len() / 2, a.len() - 1);
    let median = if less(&a[x], &a[y]) {
        if less(&a[y], &a[z]) {
            y
        } else if less(&a[x], &a[z]) {
            z
        } else {
            x
        }
    } else if less(&a[x], &a[z]) {
        x
    } else if less(&a[y], &a[z]) {
        z
    } else {
        y
    };
    a.swap(0, median);
    let (mut first, mut last) = (1, a.len());
    loop {
        // Bounded where C++ relies on the median as a sentinel (which an order that is not
        // strict and weak, as `>` with NaN, can break: undefined there, an end here).
        while first < a.len() - 1 && less(&a[first], &a[0]) {
            first += 1;
        }
        last -= 1;
        while last > 0 && less(&a[0], &a[last]) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        a.swap(first, last);
        first += 1;
    }
}

/// The final pass: the first run sorted by insertion, every later element moved down to its
/// place (the introsort left each one within a run of its place).
fn insertion_sort<T: Copy>(a: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    for i in 1..a.len() {
        let v = a[i];
        if i < RUN && less(&v, &a[0]) {
            a.copy_within(0..i, 1);
            a[0] = v;
            continue;
        }
        let mut j = i;
        while j > 0 && less(&v, &a[j - 1]) {
            a[j] = a[j - 1];
            j -= 1;
        }
        a[j] = v;
    }
}

/// libstdc++'s heapsort (`make_heap`, then `sort_heap`), for a run past the depth limit.
fn heap_sort<T: Copy>(a: &mut [T], less: &impl Fn(&T, &T) -> bool) {
    let n = a.len();
    for parent in (0..=(n - 2) / 2).rev() {
        let v = a[parent];
        sift(a, parent, n, v, less);
    }
    for end in (1..n).rev() {
        let v = a[end];
        a[end] = a[0];
        sift(a, 0, end, v, less);
    }
}

/// Fills the hole at `hole` of the heap `a[..len]` with `v`: down to a leaf by the larger
/// child, then back up past smaller parents (libstdc++'s `__adjust_heap`).
fn sift<T: Copy>(a: &mut [T], mut hole: usize, len: usize, v: T, less: &impl Fn(&T, &T) -> bool) {
    let top = hole;
    let mut child = hole;
    while child < (len - 1) / 2 {
        child = 2 * (child + 1);
        if less(&a[child], &a[child - 1]) {
            child -= 1;
        }
        a[hole] = a[child];
        hole = child;
    }
    if len % 2 == 0 && child == (len - 2) / 2 {
        child = 2 * (child + 1);
        a[hole] = a[child - 1];
        hole = child - 1;
    }
    while hole > top {
        let parent = (hole - 1) / 2;
        if !less(&a[parent], &v) {
            break;
        }
        a[hole] = a[parent];
        hole = parent;
    }
    a[hole] = v;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argmax_of_equal(n: usize) -> i32 {
        let mut v: Vec<(f32, i32)> = (0..n as i32).map(|i| (0.5, i)).collect();
        sort(&mut v, |l, r| l.0 > r.0);
        v[0].1
    }

    #[test]
    fn equal_values_come_out_in_libstdcxx_order() {
        // apache-tvm 0.27's `sample_top_p_from_logits` at temperature 0 on n equal logits.
        for (n, first) in [(3, 0), (16, 0), (17, 8), (20, 10), (33, 25), (100, 62)] {
            assert_eq!(argmax_of_equal(n), first, "n = {n}");
        }
    }

    #[test]
    fn sorts_whatever_the_input_including_past_the_depth_limit() {
        let mut seed = 12345u64;
        for n in [0, 1, 2, 15, 16, 17, 64, 1000, 5000] {
            let mut v: Vec<(f32, i32)> = (0..n)
                .map(|i| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((seed >> 40) as f32 % 7.0, i)
                })
                .collect();
            sort(&mut v, |l, r| l.0 > r.0);
            assert!(v.windows(2).all(|w| w[0].0 >= w[1].0), "n = {n}");
            // A sawtooth that drives median-of-three quicksort to its depth limit.
            let mut w: Vec<(f32, i32)> = (0..n).map(|i| ((i % 2) as f32 * i as f32, i)).collect();
            sort(&mut w, |l, r| l.0 > r.0);
            assert!(w.windows(2).all(|p| p[0].0 >= p[1].0), "n = {n}");
        }
    }
}
