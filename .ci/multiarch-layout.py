#!/usr/bin/env python3
"""Writes an OCI image layout holding one multi-arch index, for the arm64 VM's pull test:
linux/amd64 -> a root filesystem tarball (the busybox demo rootfs: no python3 in it),
linux/arm64/v8 -> another (the arm64 python toolchain image). A puller that picks the wrong
platform gets an image without python3.

usage: multiarch-layout.py OUT_DIR AMD64_TAR ARM64_TAR TAG
"""
import hashlib
import json
import os
import shutil
import sys

out, amd64_tar, arm64_tar, tag = sys.argv[1:5]
blobs = os.path.join(out, "blobs", "sha256")
os.makedirs(blobs, exist_ok=True)
with open(os.path.join(out, "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)


def put_bytes(data):
    d = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, d), "wb") as f:
        f.write(data)
    return "sha256:" + d, len(data)


def put_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    d = h.hexdigest()
    shutil.copyfile(path, os.path.join(blobs, d))
    return "sha256:" + d, os.path.getsize(path)


entries = []
for arch, variant, tar in (("amd64", None, amd64_tar), ("arm64", "v8", arm64_tar)):
    layer, size = put_file(tar)  # an uncompressed tar: its digest is its DiffID
    config = {"architecture": arch, "os": "linux", "rootfs": {"type": "layers", "diff_ids": [layer]},
              "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}}
    platform = {"architecture": arch, "os": "linux"}
    if variant:
        config["variant"] = variant
        platform["variant"] = variant
    cd, cs = put_bytes(json.dumps(config).encode())
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer, "size": size}]}
    md, ms = put_bytes(json.dumps(manifest).encode())
    entries.append({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": ms, "platform": platform})
index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": entries}
idd, ids = put_bytes(json.dumps(index).encode())
with open(os.path.join(out, "index.json"), "w") as f:
    json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.index.v1+json", "digest": idd, "size": ids,
                                                  "annotations": {"org.opencontainers.image.ref.name": tag}}]}, f)
