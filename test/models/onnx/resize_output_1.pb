
JZ™ŽxccsV[oÿÿÿÿÿÿÿÿÿÿ™lIMG:G]è–vÜœ‚—ž¡¢ÿy
ck(­ÑÂimYd’J`›‚`Qv_n¡~D²£’ˆ;Hªš®ÎI82JEPj`o…