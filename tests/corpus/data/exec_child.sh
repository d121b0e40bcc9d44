# run by exec_nested.sh: replaced by a program that exits 127
echo "child before exec"
exec bash -c 'echo "the replacing program"; exit 127'
