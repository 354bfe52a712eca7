# Debian's MLIR archives link against the imported shared target `LLVM`
# (libLLVM.so, 150 MB). Re-point that target at the few static LLVM archives
# MLIR actually needs, so our tools are self-contained and can be copied to a
# machine without LLVM 22 (see TOOLCHAIN.md).
set(_llvm_lib_dir "${LLVM_LIBRARY_DIR}")
foreach(_cfg "" _RELWITHDEBINFO _RELEASE _DEBUG _MINSIZEREL)
  set_property(TARGET LLVM PROPERTY IMPORTED_LOCATION${_cfg}
               "${_llvm_lib_dir}/libLLVMSupport.a")
  set_property(TARGET LLVM PROPERTY IMPORTED_SONAME${_cfg} "")
endforeach()
set_property(TARGET LLVM PROPERTY IMPORTED_NO_SONAME TRUE)
set_property(TARGET LLVM PROPERTY INTERFACE_LINK_LIBRARIES
  "${_llvm_lib_dir}/libLLVMRemarks.a"
  "${_llvm_lib_dir}/libLLVMBitstreamReader.a"
  "${_llvm_lib_dir}/libLLVMSupport.a"
  "${_llvm_lib_dir}/libLLVMDemangle.a"
  pthread dl m)
