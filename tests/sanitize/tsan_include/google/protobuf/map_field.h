// ThreadSanitizer builds only (CMakeLists.txt puts this folder before the system headers):
// protobuf's map_field.h gives MapFieldBase two extra members when __SANITIZE_THREAD__ is
// defined, ahead of arena_, repeated_field_, mutex_ and state_. Debian's libprotobuf.so is not
// built with ThreadSanitizer, so code built with -fsanitize=thread would disagree with the
// library about where those members of every map field are: the TSan leg crashed in
// MessageSize<Nic> and read garbage map entries. This header includes protobuf's own with
// the macro hidden, so our objects lay map fields out as the library does. It changes no
// other header: libstdc++, abseil and gRPC still see __SANITIZE_THREAD__.
#pragma once
#pragma push_macro("__SANITIZE_THREAD__")
#undef __SANITIZE_THREAD__
#include_next <google/protobuf/map_field.h>
#pragma pop_macro("__SANITIZE_THREAD__")
