"""Builds the nereid._C extension from the C sources; metadata is in pyproject.toml."""
import glob
import os

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
sources = ["python/nereid/_C.c"] + sorted(glob.glob("src/*.c"))

setup(
    ext_modules=[
        Extension(
            "nereid._C",
            sources=sources,
            include_dirs=[os.path.join(here, "include"), os.path.join(here, "src")],
            extra_compile_args=["-std=c11", "-D_GNU_SOURCE", "-O2", "-Wno-missing-field-initializers"],
            libraries=["m", "pthread", "dl"],
        )
    ],
)
