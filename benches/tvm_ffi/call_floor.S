/* Stand-ins for `TVMFFIFunctionCall` (x86-64, System V), preloaded over the real
 * `libtvm_ffi.so` by the `tvm_ffi` bench to price the tests this runtime's call makes before it
 * jumps: the same client, the same library, the same callee; only the export's instructions
 * differ. Built once per VARIANT:
 *   0  tvm-ffi's own call: a tail jump through the function's cell (`safe_call`, 24 bytes in)
 *   1  a no-op before that jump (what one more instruction costs in the loop)
 *   2  one test first: the function handle against NULL
 *   3  this runtime's hot path: the handle above the fast-path floor (NULL, and the checked
 *      mode), the result slot against NULL, the header's type index against ffi.Function's
 * A failed test returns -1, as the runtime's checked path would after setting its error.
 * Arguments: %rdi function, %rsi arguments, %edx count, %rcx result. */
    .text
    .globl TVMFFIFunctionCall
    .type TVMFFIFunctionCall, @function
    .p2align 6
TVMFFIFunctionCall:
#if VARIANT == 1
    nop
#elif VARIANT == 2
    test %rdi, %rdi
    je 1f
#elif VARIANT == 3
    cmp fast_floor(%rip), %rdi
    jbe 1f
    test %rcx, %rcx
    je 1f
    cmpl $68, 8(%rdi)          /* kTVMFFIFunction */
    jne 1f
#endif
    jmp *24(%rdi)
1:  mov $-1, %eax
    ret
    .size TVMFFIFunctionCall, .-TVMFFIFunctionCall

    .data
    .p2align 3
fast_floor:
    .quad 0                    /* the unchecked mode's floor: any handle but NULL */
    .section .note.GNU-stack,"",@progbits
