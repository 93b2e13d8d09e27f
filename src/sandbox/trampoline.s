# polysandbox's exec trampoline (see trampoline.rs): from the kernel's initial stack
# (argc, argv[0..argc], NULL, envp...), fcntl(3, F_SETFD, FD_CLOEXEC), then
# execve(argv[0], &argv[1], envp); if that returns, write its errno (4 bytes) to fd 3 and
# exit_group(127). Assembled with `as --defsym X86_64=1` or `aarch64-linux-gnu-as --defsym
# AARCH64=1`, then `objcopy -O binary -j .text`: trampoline.rs holds the bytes, and a unit test
# checks them against this file where the assemblers are installed.
.ifdef X86_64
.intel_syntax noprefix
.globl _start
_start:
    mov edi, 3
    mov esi, 2
    mov edx, 1
    mov eax, 72             # fcntl
    syscall
    mov rdi, [rsp+8]        # argv[0]: the path
    lea rsi, [rsp+16]       # &argv[1]: the command's argv
    mov rax, [rsp]          # argc
    lea rdx, [rsp+rax*8+16] # envp
    mov eax, 59             # execve
    syscall
    neg eax
    push rax
    mov edi, 3
    mov rsi, rsp
    mov edx, 4
    mov eax, 1              # write
    syscall
    mov edi, 127
    mov eax, 231            # exit_group
    syscall
.endif
.ifdef AARCH64
.globl _start
_start:
    mov x0, #3
    mov x1, #2
    mov x2, #1
    mov x8, #25             // fcntl
    svc #0
    ldr x0, [sp, #8]        // argv[0]: the path
    add x1, sp, #16         // &argv[1]: the command's argv
    ldr x3, [sp]            // argc
    add x2, sp, x3, lsl #3
    add x2, x2, #16         // envp
    mov x8, #221            // execve
    svc #0
    neg w0, w0
    str w0, [sp, #-16]!
    mov x0, #3
    mov x1, sp
    mov x2, #4
    mov x8, #64             // write
    svc #0
    mov x0, #127
    mov x8, #94             // exit_group
    svc #0
.endif
