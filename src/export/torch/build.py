"""Builds an export's PyTorch operator (the op.cpp of its package) with
torch.utils.cpp_extension into EXPORT_DIR/torch/build, linked to the
exported library (EXPORT_DIR/lib). Shared by the export's packages as
EXPORT_DIR/torch/kevolve_build.py."""
import os


def build(package_dir, root, entry, cuda, cflags=()):
    from torch.utils import cpp_extension

    libdir = os.path.join(root, "lib")
    folder = os.path.join(root, "torch", "build")
    os.makedirs(folder, exist_ok=True)
    return cpp_extension.load(
        name=f"{entry}_torch",
        sources=[os.path.join(package_dir, "op.cpp")],
        extra_include_paths=[package_dir, os.path.join(root, "include")],
        extra_cflags=["-O2", f"-DKVX_ENTRY={entry}", *cflags] + (["-DKVX_CUDA=1"] if cuda else []),
        extra_ldflags=[f"-L{libdir}", f"-l{entry}", f"-Wl,-rpath,{libdir}"],
        with_cuda=cuda,
        build_directory=folder,
        verbose=False,
    )

