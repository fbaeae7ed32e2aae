#!/usr/bin/env bash
# The Kotlin/JVM artifacts as a user gets them: the JAR must carry libferrule
# for every Linux platform the release builds (the right machine in each), with
# its POM, sources and javadoc JARs; a Maven project depending on ferrule by its
# coordinates alone, from the release's Maven repository, runs an agent (the
# lookup example on the scripted model) with no jna.library.path: JNA takes the
# library from the JAR.
#
#   tests/packages/kotlin.sh MAVEN_REPOSITORY VERSION
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

fail() { echo "packages/kotlin: $*" >&2; exit 1; }

[ $# -eq 2 ] || fail "usage: $0 MAVEN_REPOSITORY VERSION"
repository=$(realpath "$1") version=$2
artifacts=$repository/dev/ferrule/ferrule/$version
work=$root/build/packages/kotlin
rm -rf "$work"
mkdir -p "$work"

for file in ferrule-$version.jar ferrule-$version.pom ferrule-$version-sources.jar ferrule-$version-javadoc.jar; do
    [ -s "$artifacts/$file" ] || fail "the release has no $file"
done
# What Maven Central requires of a POM.
python3 - "$artifacts/ferrule-$version.pom" <<'CHECK' || fail "the POM lacks what Maven Central requires"
import sys
import xml.etree.ElementTree as ET

ns = {"m": "http://maven.apache.org/POM/4.0.0"}
project = ET.parse(sys.argv[1]).getroot()
required = ["m:name", "m:description", "m:url", "m:licenses/m:license/m:name", "m:licenses/m:license/m:url",
            "m:developers/m:developer/m:name", "m:scm/m:url", "m:scm/m:connection"]
missing = [path for path in required if not (project.findtext(path, namespaces=ns) or "").strip()]
if missing:
    sys.exit("missing: " + ", ".join(missing))
CHECK
unzip -q -d "$work/jar" "$artifacts/ferrule-$version.jar"
natives=$(cd "$work/jar" && find . -name '*.so' | sort | tr '\n' ' ')
[ "$natives" = "./linux-aarch64/libferrule.so ./linux-x86-64/libferrule.so " ] ||
    fail "the JAR's natives are $natives, not one for each of linux-aarch64 and linux-x86-64"
for licence in LICENSE-MIT LICENSE-APACHE THIRD-PARTY-NOTICES; do
    [ -s "$work/jar/META-INF/$licence" ] || fail "the JAR has no META-INF/$licence"
done
for platform in "linux-x86-64:x86-64" "linux-aarch64:ARM aarch64"; do
    folder=${platform%%:*} machine=${platform#*:}
    [ -f "$work/jar/$folder/libferrule.so" ] || fail "the JAR has no $folder/libferrule.so"
    file "$work/jar/$folder/libferrule.so" | grep -q "$machine" || fail "$folder/libferrule.so is not built for $machine"
done
unzip -l "$artifacts/ferrule-$version-javadoc.jar" | grep "dev/ferrule/Agent.html" >/dev/null || fail "the javadoc JAR has no page for Agent"
unzip -l "$artifacts/ferrule-$version-sources.jar" | grep "dev/ferrule/Agent.kt" >/dev/null || fail "the sources JAR has no Agent.kt"

# A user's project with a local repository of its own: the machine's Maven
# repository stands in for Maven Central.
consumer=$work/consumer
mkdir -p "$consumer/src/main/kotlin"
cp tests/packages/kotlin-consumer/pom.xml "$consumer/"
cp examples/kotlin/src/main/kotlin/Lookup.kt "$consumer/src/main/kotlin/"
unset OPENAI_API_KEY ANTHROPIC_API_KEY GEMINI_API_KEY LD_LIBRARY_PATH
# JNA says where it loads the library from (jna.debug_load): it must be the JAR.
out=$(cd "$consumer" && MAVEN_OPTS="-Djna.debug_load=true" mvn -q -B -Dstyle.color=never -Dmaven.repo.local="$work/m2" \
    -Dferrule.repository="file://$repository" -Dmachine.repository="file://$HOME/.m2/repository" \
    compile exec:java 2>&1) || fail "the program failed: $out"
echo "$out" | grep -q "answer: C-100 is on the Gold plan." || fail "the program did not answer: $out"
echo "$out" | grep -q "Found library resource at jar:file:$work/m2/dev/ferrule/ferrule/$version/ferrule-$version.jar" ||
    fail "JNA did not load libferrule from the release's JAR: $out"
grep -q "ferrule-$version.jar>ferrule-release=" "$work/m2/dev/ferrule/ferrule/$version/_remote.repositories" ||
    fail "ferrule's JAR did not come from the release's repository"
echo "packages/kotlin: a Maven project ran an agent on dev.ferrule:ferrule:$version from the release's repository"
