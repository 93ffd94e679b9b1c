/* Preloaded into OpenMP programs run under Debian's libomptarget 19 on a GPU: registers LLVM's
 * NVPTX target, which that build of the runtime does not register for its JIT (without it,
 * loading a bitcode image fails with "Unable to find target for this triple (no targets are
 * registered)"). Test-harness plumbing for GPU runners, not part of the library. The functions
 * are libLLVM.so.19.1's C API (llvm-c/Target.h), declared here so no LLVM headers are needed. */
void LLVMInitializeNVPTXTargetInfo(void);
void LLVMInitializeNVPTXTarget(void);
void LLVMInitializeNVPTXTargetMC(void);
void LLVMInitializeNVPTXAsmPrinter(void);

__attribute__((constructor)) static void register_nvptx_target(void)
{
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
}
