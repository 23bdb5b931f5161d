// The one translation unit that compiles Asio, Asio's SSL and Beast (separate compilation:
// BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION), so no other file pays
// for their implementation.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
