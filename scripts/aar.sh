#!/usr/bin/env bash
# Builds the Android library (AAR) of the Kotlin binding:
# build/android/ferrule-android-VERSION.aar with the classes and
# jni/<abi>/libferrule.so for arm64-v8a, armeabi-v7a and x86_64, and its POM
# (the JVM POM's dependencies, with JNA's AAR instead of its JAR).
# Needs the Android NDK (ANDROID_NDK_HOME) and cargo-ndk: scripts/dist.sh says
# which is missing. Linux (GNU tools, bash 4).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
out=$root/build/android
rm -rf "$out"
mkdir -p "$out/aar" "$out/no-natives"
trap 'rm -rf "$out/aar" "$out/no-natives"' EXIT

declare -A abi=([aarch64-linux-android]=arm64-v8a [armv7-linux-androideabi]=armeabi-v7a [x86_64-linux-android]=x86_64)
for target in "${!abi[@]}"; do
    ./scripts/dist.sh "$target"
    install -D -m 755 "target/$target/dist/libferrule.so" "$out/aar/jni/${abi[$target]}/libferrule.so"
done

# The classes alone: Android loads the libraries from jni/, not the class path.
(cd bindings/kotlin && mvn -q -B -Dstyle.color=never clean package -DskipTests -Dferrule.native.dir="$out/no-natives")
cp "bindings/kotlin/target/ferrule-$version.jar" "$out/aar/classes.jar"
! unzip -l "$out/aar/classes.jar" | grep '\.so$' >/dev/null || { echo "aar: classes.jar holds native libraries" >&2; exit 1; }
cat > "$out/aar/AndroidManifest.xml" <<'EOF'
<?xml version="1.0" encoding="utf-8"?>
<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="dev.ferrule">
    <uses-sdk android:minSdkVersion="24" />
</manifest>
EOF
(cd "$out/aar" && zip -qr "$out/ferrule-android-$version.aar" .)
sed -e '0,/<artifactId>ferrule<\/artifactId>/s//<artifactId>ferrule-android<\/artifactId>/' \
    -e 's|<packaging>jar</packaging>|<packaging>aar</packaging>|' \
    -e '/<artifactId>jna<\/artifactId>/a\      <type>aar</type>' \
    bindings/kotlin/pom.xml > "$out/ferrule-android-$version.pom"
echo "aar: $out/ferrule-android-$version.aar and its POM"
