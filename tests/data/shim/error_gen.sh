#!/bin/bash
# Test stand-in for glideinWMS creation/web_base/error_gen.sh (glideinWMS/glideinwms,
# Apache-2.0), written to its contract: writes otrb_output.xml in the current directory.
#   error_gen.sh -ok ID [METRIC VALUE]...
#   error_gen.sh -error ID FAILURE_TYPE "DETAIL" [METRIC VALUE]...
metric() {
    echo "    <metric name=\"$1\" ts=\"$(date "+%Y-%m-%dT%H:%M:%S%:z")\" uri=\"local\">$2</metric>" >> otrb_output.xml
}
header() {
    printf '<?xml version="1.0"?>\n<OSGTestResult id="%s" version="4.3.1">\n  <result>\n    <status>%s</status>\n' "$1" "$2" > otrb_output.xml
}
case "$1" in
    -ok)
        shift; header "$1" OK; shift
        while [ $# -gt 1 ]; do metric "$1" "$2"; shift 2; done
        echo "  </result>" >> otrb_output.xml ;;
    -error)
        shift; header "$1" ERROR; shift
        metric failure "$1"; detail=$2; shift 2
        while [ $# -gt 1 ]; do metric "$1" "$2"; shift 2; done
        echo "  </result>" >> otrb_output.xml
        printf '  <detail>\n    %s\n  </detail>\n' "$detail" >> otrb_output.xml ;;
    *) echo "Usage: -error|-ok [params]" >&2; exit 1 ;;
esac
echo "</OSGTestResult>" >> otrb_output.xml
